package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// ShardKeyDeleter deletes a shard's lock key only if no session holds it,
// refusing a held one with shard.ErrKeyHeld in the same step (a
// check-and-delete), and reports whether the key existed. Both
// coordinators implement it (DeleteFreeShard).
type ShardKeyDeleter interface {
	DeleteFreeShard(ctx context.Context, id shard.ID) (existed bool, err error)
}

// DeleterFunc adapts a function to ShardKeyDeleter.
type DeleterFunc func(ctx context.Context, id shard.ID) (bool, error)

// DeleteFreeShard calls f.
func (f DeleterFunc) DeleteFreeShard(ctx context.Context, id shard.ID) (bool, error) {
	return f(ctx, id)
}

// Deleted is a shard key DeleteShard removed.
type Deleted struct {
	Shard shard.ID
	// InFleet is true for one of the fleet's own shards (a free key, which
	// the next owner creates again), false for a key outside the config.
	InFleet bool
	// Token is the key's modify index before the delete, 0 when the
	// listing does not show it (keys outside the config).
	Token shard.Token
	// Problem is what the listing reported about the key, if anything.
	Problem string
}

// DeleteShard removes the shard key P/shards/<id> that a hand edit left:
// a key outside the fleet's config (a mistyped name, or keys of a larger
// config that nobody holds any more), or a free key of one of the fleet's
// shards whose value was overwritten. Either is reported in every listing
// until it is gone. The delete is a coordinator write, so the next owner
// of the shard still gets a token above every earlier one.
//
// id is a shard ID as it appears under P/shards/ (no number: a key
// outside the config has none). DeleteShard refuses:
//   - a key held by a session (ErrShardHeld): deleting a lock under its
//     holder would take the shard from it without a word, the holder
//     learning only when the assignor sees the shard free. Release it
//     (Release records why) and, for keys outside the config that
//     running workers hold, restore the config they run;
//   - a key that does not exist (ErrNoShardKey);
//   - a fleet without a config (ErrNoFleet).
//
// keys deletes the key once the rules allow it; a nil keys is an error
// then, not a panic.
//
// The rules are checked on a listing, and the delete itself refuses a key
// a session holds (the coordinator checks and deletes in one step), so a
// worker that acquires the shard between the listing and the delete keeps
// it: DeleteShard then returns ErrShardHeld and deletes nothing.
func (o Operator) DeleteShard(ctx context.Context, keys ShardKeyDeleter, id shard.ID) (Deleted, error) {
	s, err := o.Snapshot(ctx)
	if err != nil {
		return Deleted{}, err
	}
	if id == "" {
		return Deleted{}, fmt.Errorf("an empty shard ID names no key: %w", ErrNoShardKey)
	}
	d := Deleted{Shard: id, Problem: keyProblem(s.Problems, id)}
	if slices.Contains(s.Config.IDs(), id) {
		d.InFleet = true
		st, ok := s.Shard(id)
		switch {
		case !ok:
			return d, fmt.Errorf("%s has no key in fleet %s (never acquired, or deleted already): %w", id, o.Name, ErrNoShardKey)
		case st.Held():
			return d, fmt.Errorf("%s is held by session %s (worker %q, token %d): release it instead, which records why and lets its owner stop: %w",
				id, st.Session, st.Owner.Worker, st.Token, ErrShardHeld)
		}
		d.Token = st.Token
	} else if s.Config.Retired(id) {
		// A parent of a finished reshard, or a child of a cancelled one:
		// never locked again, listed with every other key until deleted.
		d.Problem = fmt.Sprintf("%s: a shard of a layout fleet %s no longer runs (resharded)", id, o.Name)
	} else {
		if d.Problem == "" {
			return d, fmt.Errorf("no key for %q in fleet %s: not one of its %d shards, and the listing shows no such key: %w", id, o.Name, s.Config.Shards, ErrNoShardKey)
		}
		if held := heldOutside(s.Problems); held != "" {
			return d, fmt.Errorf("%s is outside the stored config, but keys outside it are held, so running workers use another config; restore the config rather than delete their locks (%s): %w", id, held, ErrShardHeld)
		}
	}
	if keys == nil {
		return d, fmt.Errorf("admin: DeleteShard of %s was given no ShardKeyDeleter", id)
	}
	existed, err := keys.DeleteFreeShard(ctx, id)
	switch {
	case errors.Is(err, shard.ErrKeyHeld):
		return d, fmt.Errorf("%s was acquired after the listing; nothing deleted: %w: %w", id, err, ErrShardHeld)
	case err != nil:
		return d, fmt.Errorf("%w: delete shard key %s: %w", ErrWrite, id, err)
	case !existed:
		return d, fmt.Errorf("%s: its key was deleted by someone else meanwhile: %w", id, ErrNoShardKey)
	}
	return d, nil
}

// keyProblem is the listing's problem about the key of shard id: the
// coordinators report a key as "<prefix>/shards/<id>: <what is wrong>".
func keyProblem(problems []string, id shard.ID) string {
	for _, p := range problems {
		if strings.Contains(p, "/shards/"+string(id)+": ") {
			return p
		}
	}
	return ""
}

// heldOutside is the listing's report that shard keys outside the stored
// config are held (the config was rewritten under running workers), or
// "".
func heldOutside(problems []string) string {
	for _, p := range problems {
		if strings.Contains(p, "outside the stored config") && strings.Contains(p, "are held") {
			return p
		}
	}
	return ""
}
