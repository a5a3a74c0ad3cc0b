package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Candidacy is one session's campaign for one lock (a role's, such as the
// fleet's assignor or an election's leader).
type Candidacy struct {
	Locks   shard.Locks
	Session shard.SessionID
	Lock    shard.Lock
	// Policy is the session's lease policy: a lock refused while its key
	// is free is tried again one lock-delay later, and each attempt is
	// bounded by the renewal interval.
	Policy shard.LeasePolicy
	// Jitter returns a random duration in [0, d); nil uses math/rand/v2.
	// An owner passes its own seeded jitter, so a simulation replays its
	// waits.
	Jitter func(d time.Duration) time.Duration
	// Seen, if set, is given every answer of the lock's key: who holds it.
	Seen func(shard.LockKey)
	// OnError is given every failed read of the key and every failed
	// attempt to take the lock, but for a gone session's; when it returns
	// false, Campaign returns that error. Nil retries every error.
	OnError func(error) bool
}

// Campaign takes c.Lock with c.Session whenever it can, and each time the
// session holds it calls lead with the lock's token, on Campaign's
// goroutine, until ctx ends. It tries at once, whoever holds the key;
// then, while another session holds the lock, it waits on the key, which
// that holder's release or end writes; once the key is free but the lock
// refused (the lock-delay after a holder's session ended, whose end is
// not a write) it tries again a lock-delay later, with jitter, so that
// candidates do not all try at once. Whoever tries first wins: there is
// no queue. Once lead returns it reads the key afresh and tries again.
//
// Campaign returns nil when ctx ends, an error wrapping
// shard.ErrSessionInvalid when the session is gone, and any error OnError
// refuses. It does not release the lock.
func Campaign(ctx context.Context, c Candidacy, lead func(shard.Token)) error {
	if c.Jitter == nil {
		c.Jitter = func(d time.Duration) time.Duration { return rand.N(d + 1) }
	}
	watch := func(ctx context.Context, after uint64) (shard.LockKey, error) {
		return c.Locks.Watch(ctx, c.Lock, after)
	}
	retry := func(err error) bool { return c.OnError == nil || c.OnError(err) }
	ld := c.Policy.EffectiveLockDelay()
	fresh := true // the first answer of a following: try whoever holds the key
	return shard.Follow(ctx, watch, shard.FollowOptions{Jitter: c.Jitter, OnError: c.OnError}, func(k shard.LockKey) (time.Time, error) {
		if c.Seen != nil {
			c.Seen(k)
		}
		other := k.Held() && k.Session != c.Session
		if other && !fresh {
			return time.Time{}, nil // its holder's end clears the key's session: a write that wakes us
		}
		fresh = false
		tctx, cancel := context.WithTimeout(ctx, c.Policy.RenewEvery)
		token, held, err := shard.TryLock(tctx, c.Locks, c.Session, c.Lock)
		cancel()
		switch {
		case ctx.Err() != nil:
			return time.Time{}, shard.ErrStopFollowing
		case errors.Is(err, shard.ErrSessionInvalid) || err != nil && !retry(err):
			return time.Time{}, err
		case err != nil:
			fresh = true
			return time.Time{}, shard.ErrFollowAgain
		case held:
			lead(token)
			fresh = true
			return time.Time{}, shard.ErrFollowAgain // look again: campaign anew
		case other:
			return time.Time{}, nil // wait for its holder's end
		}
		// Free, but refused: a lock-delay, whose end is not a write.
		return time.Now().Add(ld + 25*time.Millisecond + c.Jitter(ld/4)), nil
	})
}
