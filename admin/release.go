package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// Shard states, as ShardInfo.State gives them.
const (
	ShardOwned    = fleetview.ShardOwned    // held by a live member's session
	ShardFree     = fleetview.ShardFree     // no session holds the key
	ShardOrphaned = fleetview.ShardOrphaned // held by a session whose member key is gone or dead
)

// DefaultReleaseReason is what Release records when given no reason.
const DefaultReleaseReason = "forced free by an operator"

// ShardInfo is one shard as a listing showed it.
type ShardInfo struct {
	ID    shard.ID
	State string // ShardOwned, ShardFree or ShardOrphaned
	// Owner is the live worker holding the shard; for a free or orphaned
	// shard, the worker its key names.
	Owner   string
	Session shard.SessionID
	// Token is the key's fencing token (0: never acquired).
	Token shard.Token
	Since time.Time
	// Reason is the acquisition reason the owner wrote; Why says in one
	// phrase why the shard last moved.
	Reason, Why string
	// Assigned is the worker whose assignment key lists the shard: where
	// the assignor sends it next (or keeps it).
	Assigned string
}

func shardInfo(s fleetview.Shard) ShardInfo {
	return ShardInfo{ID: s.ID, State: s.State, Owner: s.Owner, Session: s.Session, Token: s.Token,
		Since: s.Since, Reason: s.Reason, Why: s.Why, Assigned: s.Assigned}
}

// Shard reads the shard named by arg (its ID or its number, see
// ResolveShard) as the fleet holds it now.
func (o Operator) Shard(ctx context.Context, arg string) (ShardInfo, error) {
	f, s, err := o.view(ctx)
	if err != nil {
		return ShardInfo{}, err
	}
	id, err := ResolveShard(o.Name, *s.Config, arg)
	if err != nil {
		return ShardInfo{}, err
	}
	sh, _ := f.Shard(id)
	return shardInfo(sh), nil
}

// Release forces the shard free now, through its holder's session and
// without asking the holder, and records reason in its key (empty:
// DefaultReleaseReason); the next owner's acquisition reason quotes it.
// The holder learns of it on its next look and stops its handler; until
// then its writes carry its old token, which the offset store refuses
// once the next owner has fenced with its higher one. What is lost is
// the work the holder had not committed.
//
// held is the shard as the caller read it (Shard), and what it confirmed:
// Release reads the shard again and releases it only if the same session
// still holds it at the same token. It refuses a free shard
// (ErrShardFree) and one that changed hands since (ErrShardMoved); a
// holder whose session ended meanwhile is ErrOwnerGone (the shard is
// free already). An orphaned shard (its member key gone) is released
// like an owned one.
func (o Operator) Release(ctx context.Context, held ShardInfo, reason string) error {
	if held.State == ShardFree {
		return fmt.Errorf("%s is already free (%s); nothing to release: %w", held.ID, held.Why, ErrShardFree)
	}
	s, err := o.Snapshot(ctx)
	if err != nil {
		return err
	}
	now, _ := s.Shard(held.ID)
	switch {
	case !now.Held():
		return fmt.Errorf("%s is free now (it was held by %s with token %d); nothing to release: %w", held.ID, held.Owner, held.Token, ErrShardFree)
	case now.Session != held.Session || now.Token != held.Token:
		return fmt.Errorf("%s changed hands since it was read (token %d then, %d now); read it again: %w", held.ID, held.Token, now.Token, ErrShardMoved)
	}
	if reason == "" {
		reason = DefaultReleaseReason
	}
	if err := o.Coordinator.Locks().Release(ctx, held.Session, []shard.Lock{shard.ShardLock(held.ID)}, reason); err != nil {
		if errors.Is(err, shard.ErrSessionInvalid) {
			return fmt.Errorf("%s: its owner's session ended meanwhile, so it is free already: %w", held.ID, ErrOwnerGone)
		}
		return fmt.Errorf("%w: release %s: %w", ErrWrite, held.ID, err)
	}
	return nil
}

// WaitNextOwner follows the fleet until a live worker owns the shard with
// a token above after, and returns the shard then. Failed listings go to
// onError as in FollowDrain. When ctx ends first it returns ErrNotTaken
// beside the context's cause: the shard stays free until a worker takes
// it.
func (o Operator) WaitNextOwner(ctx context.Context, id shard.ID, after shard.Token, onError func(error) bool) (ShardInfo, error) {
	var next ShardInfo
	err := o.follow(ctx, func(f fleetview.Fleet) error {
		if s, ok := f.Shard(id); ok && s.State == ShardOwned && s.Token > after {
			next = shardInfo(s)
			return fleetview.ErrStop
		}
		return nil
	}, onError)
	switch {
	case err != nil:
		return ShardInfo{}, err
	case next.ID == "":
		return ShardInfo{}, fmt.Errorf("no worker has taken %s yet: %w: %w", id, ErrNotTaken, context.Cause(ctx))
	}
	return next, nil
}
