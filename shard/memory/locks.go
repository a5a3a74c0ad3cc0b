package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Acquire locks, for the session, every wanted shard that is free and not in
// lock-delay, and returns a claim per shard the session holds afterwards, in
// the order asked for (a shard asked for twice counts once, with the first
// reason). Shards held by another session or in lock-delay are left out;
// that is not an error.
//
// The shards to lock are written MaxTxnShards per transaction; every shard of
// one transaction gets the transaction's index as its token and
// Owner{Worker: the session's worker, Reason, Since: now} as its value. A
// shard the session already holds is not written again (a re-lock would
// change its token) and is returned with its current token.
//
// Errors, each leaving everything as it was: the session is gone
// (shard.ErrSessionInvalid); an empty shard ID (shard.ErrInvalidArgument); a
// shard outside the stored config, if one is stored (shard.ErrUnknownShard,
// naming the shard).
func (c *Coordinator) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.catchUpLocked()

	s, err := c.liveSessionLocked(id)
	if err != nil {
		return nil, err
	}
	want = uniqueBy(want, func(a shard.Acquisition) shard.ID { return a.Shard })
	for _, a := range want {
		if err := c.checkShardLocked(a.Shard); err != nil {
			return nil, err
		}
	}

	tokens := make(map[shard.ID]shard.Token, len(want))
	var toLock []shard.Acquisition
	for _, a := range want {
		k := c.shards[a.Shard]
		switch {
		case k != nil && k.session == id:
			tokens[a.Shard] = shard.Token(k.index)
		case k != nil && k.session != "":
			// held by another session
		case c.inLockDelayLocked(a.Shard, now):
		default:
			toLock = append(toLock, a)
		}
	}
	for batch := range slices.Chunk(toLock, MaxTxnShards) {
		idx := c.commitLocked()
		for _, a := range batch {
			c.shards[a.Shard] = &shardKey{
				session: id,
				index:   idx,
				owner:   shard.Owner{Worker: s.spec.Worker, Reason: a.Reason, Since: now},
			}
			tokens[a.Shard] = shard.Token(idx)
		}
	}

	claims := make([]shard.Claim, 0, len(tokens))
	for _, a := range want {
		if t, ok := tokens[a.Shard]; ok {
			claims = append(claims, shard.Claim{Shard: a.Shard, Token: t})
		}
	}
	return claims, nil
}

// Release unlocks the shards among ids that the session holds, MaxTxnShards
// per transaction, and records why in their value (Owner.Released); the rest
// of the value stays, so a snapshot still shows who had the shard. A
// voluntary release sets no lock-delay. Shards the session does not hold are
// ignored; a gone session wraps shard.ErrSessionInvalid.
func (c *Coordinator) Release(ctx context.Context, id shard.SessionID, ids []shard.ID, why string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if _, err := c.liveSessionLocked(id); err != nil {
		return err
	}
	var held []*shardKey
	for _, sh := range uniqueBy(ids, func(sh shard.ID) shard.ID { return sh }) {
		if k := c.shards[sh]; k != nil && k.session == id {
			held = append(held, k)
		}
	}
	for batch := range slices.Chunk(held, MaxTxnShards) {
		idx := c.commitLocked()
		for _, k := range batch {
			k.session, k.index = "", idx
			k.owner.Released = why
		}
	}
	return nil
}

// checkShardLocked refuses a shard ID that cannot be a lock key of the fleet.
func (c *Coordinator) checkShardLocked(sh shard.ID) error {
	if sh == "" {
		return fmt.Errorf("%w: shard id is empty", shard.ErrInvalidArgument)
	}
	if c.known != nil && !c.known[sh] {
		return fmt.Errorf("%w: %q is not one of the fleet's %d shards named %q",
			shard.ErrUnknownShard, sh, c.config.Shards, c.config.Name)
	}
	return nil
}

// inLockDelayLocked reports whether the shard is still locked out by an
// invalidated session. A lock-delay that has ended is forgotten.
func (c *Coordinator) inLockDelayLocked(sh shard.ID, now time.Time) bool {
	until, ok := c.lockDelay[sh]
	if !ok {
		return false
	}
	if now.Before(until) {
		return true
	}
	delete(c.lockDelay, sh)
	return false
}

// uniqueBy returns xs without the elements whose key was seen before, in
// order. It does not modify xs.
func uniqueBy[T any](xs []T, key func(T) shard.ID) []T {
	seen := make(map[shard.ID]bool, len(xs))
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if k := key(x); !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}
