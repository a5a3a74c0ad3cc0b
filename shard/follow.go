package shard

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Indexed is an answer of a blocking query: a Snapshot, a LockKey, a
// MemberKey or an AssignmentKey.
type Indexed interface {
	// BlockingIndex is the index to wait on next (see NextIndex).
	BlockingIndex() uint64
}

// BlockingIndex is the snapshot's index.
func (s Snapshot) BlockingIndex() uint64 { return s.Index }

// BlockingIndex is the key's index.
func (k LockKey) BlockingIndex() uint64 { return k.Index }

// BlockingIndex is the key's index.
func (k MemberKey) BlockingIndex() uint64 { return k.Index }

// BlockingIndex is the key's index.
func (k AssignmentKey) BlockingIndex() uint64 { return k.Index }

// Sentinels a Follow callback returns.
var (
	// ErrStopFollowing ends Follow with a nil error.
	ErrStopFollowing = errors.New("shard: stop following")
	// ErrFollowAgain makes Follow wait its backoff and read again from
	// index 0, as after a failed read: for a callback whose own action
	// failed and must look at the key afresh.
	ErrFollowAgain = errors.New("shard: follow again from the start")
)

// FollowOptions tune Follow; the zero value follows as fast as the
// coordinator answers and retries every error.
type FollowOptions struct {
	// MinSpacing is the least time between the starts of two reads, so a
	// burst of changes costs one callback; a change after a quiet spell
	// is still seen at once.
	MinSpacing time.Duration
	// OnError is given every failed read; when it returns false Follow
	// returns that error. Nil retries every error.
	OnError func(error) bool
	// Jitter returns a random duration in [0, d): the backoff's spread.
	// Nil uses math/rand/v2; a worker passes its own seeded jitter so a
	// simulated fleet replays its waits.
	Jitter func(d time.Duration) time.Duration
	// After is an index the caller has already seen (a read of its own,
	// shown or acted on): the first read waits for a change past it, so
	// fn is first called on a change, not with what the caller has. Zero:
	// fn gets the first answer at once. A failed read starts over from 0
	// as always.
	After uint64
}

// The backoff of a failed read: jittered between half and all of a wait
// that doubles from followFirstWait to followMaxWait, and starts over
// after a read that succeeds.
const (
	followFirstWait = 50 * time.Millisecond
	followMaxWait   = 2 * time.Second
)

// Follow reads a key or prefix with blocking queries, one after another
// (watch is e.g. a Fleet's Watch, or a Locks' Watch bound to one lock),
// following NextIndex's rules, and calls fn with every answer whose index
// moved, the first one at once (with opts.After, the first past it). fn returns when to call it again if
// nothing changes before then (zero: only on a change): Follow then bounds
// its wait by that time and, when it passes, calls fn again with the last
// answer. A failed read is retried with a jittered exponential backoff
// (50 ms to 2 s) unless opts.OnError says to stop.
//
// Follow returns nil when ctx ends or fn returns ErrStopFollowing, and
// fn's other errors as they are, except ErrFollowAgain.
func Follow[T Indexed](ctx context.Context, watch func(ctx context.Context, after uint64) (T, error), opts FollowOptions,
	fn func(T) (time.Time, error)) error {
	jitter := opts.Jitter
	if jitter == nil {
		jitter = func(d time.Duration) time.Duration { return rand.N(d + 1) }
	}
	var (
		index   = opts.After
		wait    = followFirstWait
		started time.Time // when the previous read started
		again   time.Time // when to call fn again without a change
		last    T
		have    bool // last holds an answer fn was called with
	)
	backoff := func() bool {
		d := wait/2 + jitter(wait/2)
		wait = min(2*wait, followMaxWait)
		return sleep(ctx, d)
	}
	for {
		if !started.IsZero() && !sleep(ctx, opts.MinSpacing-time.Since(started)) {
			return nil
		}
		started = time.Now()
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if !again.IsZero() {
			rctx, cancel = context.WithDeadline(ctx, again)
		}
		v, err := watch(rctx, index)
		timedOut := rctx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case timedOut && have && (err != nil || v.BlockingIndex() == index):
			v = last // nothing changed, but time did: call fn again
		case err != nil:
			if opts.OnError != nil && !opts.OnError(err) {
				return err
			}
			if !backoff() {
				return nil
			}
			index = 0
			continue
		case index != 0 && v.BlockingIndex() == index:
			continue // a blocking query that timed out: nothing changed
		default:
			wait = followFirstWait
			index = NextIndex(index, v.BlockingIndex())
		}
		last, have = v, true
		next, err := fn(v)
		switch {
		case errors.Is(err, ErrStopFollowing):
			return nil
		case errors.Is(err, ErrFollowAgain):
			if !backoff() {
				return nil
			}
			index, again, have = 0, time.Time{}, false
			continue
		case err != nil:
			return err
		}
		again = next
	}
}

// NextIndex applies Consul's blocking-query rules to the index a watch
// returned: an index that went backwards means the coordinator's state was
// reset, so the next watch must start over from 0; an index of 0 is never
// waited on (it would return at once forever), so it becomes 1. Otherwise the
// returned index is the next one to wait on; an unchanged index means nothing
// changed (a timeout) and the caller simply waits again.
func NextIndex(prev, got uint64) uint64 {
	switch {
	case got < prev:
		return 0
	case got == 0:
		return 1
	default:
		return got
	}
}

// sleep waits for d (nothing when d ≤ 0) and reports whether ctx is still
// live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
