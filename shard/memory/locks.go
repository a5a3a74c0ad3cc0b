package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// lockKey is one lock's key (a shard's, or a role's such as P/assignor):
// the holding session, the key's modify index and its value.
type lockKey struct {
	session shard.SessionID // empty: free
	index   uint64
	owner   shard.Owner
}

// token is the key's token: its generation and its index.
func (k *lockKey) token() shard.Token { return k.owner.TokenAt(k.index) }

// locks is the coordinator's shard.Locks.
type locks struct{ c *Coordinator }

// Locks returns the coordinator's locks: each shard's and each role's.
func (c *Coordinator) Locks() shard.Locks { return locks{c} }

// Acquire locks, for the session, every wanted lock that is free and not
// in lock-delay, and returns a grant per lock the session holds
// afterwards, in the order asked for (a lock asked for twice counts once,
// with the first reason). Locks held by another session or in lock-delay
// are left out; that is not an error.
//
// The locks to take are written MaxTxnShards per transaction; every lock
// of one transaction gets Owner{Worker: the session's worker, Reason,
// Since: now, Gen: the stored config's generation} as its value and the
// generation and the transaction's index as its token. A
// lock the session already holds is not written again (a re-lock would
// change its token) and is returned with its current token.
//
// Errors, each leaving everything as it was: the session is gone
// (shard.ErrSessionInvalid); a lock name shard.Lock.Validate refuses
// (shard.ErrInvalidArgument); a shard outside the stored config, if one is
// stored (shard.ErrUnknownShard, naming the shard).
func (l locks) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Grant, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.catchUpLocked()

	s, err := c.liveSessionLocked(id)
	if err != nil {
		return nil, err
	}
	want = fleetkeys.UniqueBy(want, func(a shard.Acquisition) shard.Lock { return a.Lock })
	for _, a := range want {
		if err := c.checkLockLocked(a.Lock); err != nil {
			return nil, err
		}
	}

	tokens := make(map[shard.Lock]shard.Token, len(want))
	var toLock []shard.Acquisition
	for _, a := range want {
		k := c.locks[a.Lock]
		switch {
		case k != nil && k.session == id:
			tokens[a.Lock] = k.token()
		case k != nil && k.session != "":
			// held by another session
		case c.inLockDelayLocked(a.Lock, now):
		case !c.acquirableLocked(a.Lock):
			// a reshard's child not yet open, or a parent closed for good
		default:
			toLock = append(toLock, a)
		}
	}
	gen := c.generationLocked()
	if n := uint64((len(toLock) + MaxTxnShards - 1) / MaxTxnShards); c.index+n > shard.MaxIndex {
		return nil, fmt.Errorf("%w: the coordinator's index %d would pass the highest a token carries, %d",
			shard.ErrUnavailable, c.index, uint64(shard.MaxIndex))
	}
	for batch := range slices.Chunk(toLock, MaxTxnShards) {
		idx := c.commitLocked()
		for _, a := range batch {
			k := &lockKey{
				session: id,
				index:   idx,
				owner:   shard.Owner{Worker: s.spec.Worker, Why: a.Why, Since: now, Gen: gen},
			}
			c.locks[a.Lock] = k
			tokens[a.Lock] = k.token()
		}
	}

	grants := make([]shard.Grant, 0, len(tokens))
	for _, a := range want {
		if t, ok := tokens[a.Lock]; ok {
			grants = append(grants, shard.Grant{Lock: a.Lock, Token: t})
		}
	}
	return grants, nil
}

// Release unlocks the locks among ls that the session holds, MaxTxnShards
// per transaction, and records why in their value (Owner.Released); the
// rest of the value stays, so a snapshot still shows who had the lock. A
// voluntary release sets no lock-delay. Locks the session does not hold
// are ignored; a gone session wraps shard.ErrSessionInvalid.
func (l locks) Release(ctx context.Context, id shard.SessionID, ls []shard.Lock, why shard.Reason) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if _, err := c.liveSessionLocked(id); err != nil {
		return err
	}
	var held []*lockKey
	for _, lk := range fleetkeys.UniqueBy(ls, func(lk shard.Lock) shard.Lock { return lk }) {
		if k := c.locks[lk]; k != nil && k.session == id {
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

// Watch is a blocking query on one lock's key: it returns the key as soon
// as its index is above after (at once when after is 0, or when after is
// ahead of the store's index, so that shard.NextIndex sees the reset). A
// missing key's index is that of the write that deleted it, so its
// deletion wakes the watcher once; other keys' writes never do. The end of
// a lock-delay is not a write and wakes nobody.
func (l locks) Watch(ctx context.Context, lock shard.Lock, after uint64) (shard.LockKey, error) {
	if err := lock.Validate(); err != nil {
		return shard.LockKey{}, err
	}
	c := l.c
	key := func() shard.LockKey {
		k, exists := c.lockKeyLocked(lock)
		if !exists {
			k.Index = max(c.lockGone[lock], 1)
		}
		return k
	}
	return blockingRead(ctx, c, after, func() uint64 { return key().Index }, key)
}

// lockKeyLocked returns a lock's key as a snapshot shows it (Index 0 when
// missing) and whether it exists.
func (c *Coordinator) lockKeyLocked(lock shard.Lock) (shard.LockKey, bool) {
	k := c.locks[lock]
	if k == nil {
		return shard.LockKey{}, false
	}
	key := shard.LockKey{Index: k.index, Owner: k.owner}
	if k.session != "" {
		key.Session, key.Token = k.session, k.token()
	}
	return key, true
}

// checkLockLocked refuses a lock name that cannot be one of the fleet's.
func (c *Coordinator) checkLockLocked(lock shard.Lock) error {
	if err := lock.Validate(); err != nil {
		return err
	}
	if sh, ok := lock.Shard(); ok {
		return c.checkShardLocked(sh)
	}
	return nil
}

// checkShardLocked refuses a shard ID that is not one of the fleet's.
func (c *Coordinator) checkShardLocked(sh shard.ID) error {
	if sh == "" {
		return fmt.Errorf("%w: shard id is empty", shard.ErrInvalidArgument)
	}
	if c.known != nil {
		return c.known.Unknown([]shard.Acquisition{shard.AcquireShard(sh, shard.Why{})})
	}
	return nil
}

// acquirableLocked reports whether lock may be taken under the stored
// config (shard.Config.Acquirable).
func (c *Coordinator) acquirableLocked(lock shard.Lock) bool {
	id, ok := lock.Shard()
	return !ok || c.config == nil || c.config.Acquirable(id)
}

// inLockDelayLocked reports whether the lock is still closed after an
// invalidated session. A lock-delay that has ended is forgotten.
func (c *Coordinator) inLockDelayLocked(lock shard.Lock, now time.Time) bool {
	until, ok := c.lockDelay[lock]
	if !ok {
		return false
	}
	if now.Before(until) {
		return true
	}
	delete(c.lockDelay, lock)
	return false
}

// deleteLockLocked deletes a lock's key, as an operator's delete in
// Consul would, and reports whether it existed. The deletion is a write,
// so the lock's next holder still gets a higher token than every earlier
// one; a session that held the key simply no longer holds it, and a
// pending lock-delay remains.
func (c *Coordinator) deleteLockLocked(lock shard.Lock) bool {
	if _, ok := c.locks[lock]; !ok {
		return false
	}
	c.lockGone[lock] = c.commitLocked()
	delete(c.locks, lock)
	return true
}
