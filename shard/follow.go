package shard

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// ErrStopFollowing, returned by Follow's fn, ends Follow with a nil error.
var ErrStopFollowing = errors.New("shard: stop following")

// FollowOptions tune Follow; the zero value follows as fast as the
// coordinator answers and retries every error.
type FollowOptions struct {
	// MinSpacing is the least time between the starts of two listings.
	// Each listing is the whole prefix, so an observer of a large, busy
	// fleet sets it to list a few times a second at most; a change after
	// a quiet spell is still seen at once.
	MinSpacing time.Duration
	// OnError is given every failed listing; when it returns false Follow
	// returns that error. Nil retries every error.
	OnError func(error) bool
}

// Follow runs blocking queries on c one after another and calls fn with
// every snapshot whose index moved (the first one at once), following
// NextIndex's rules. A failed listing is retried with jittered exponential
// backoff (50 ms to 2 s) unless opts.OnError says to stop. Follow returns
// nil when ctx ends or fn returns ErrStopFollowing, and fn's other errors
// as they are.
func Follow(ctx context.Context, c Coordinator, opts FollowOptions, fn func(Snapshot) error) error {
	const firstWait, maxWait = 50 * time.Millisecond, 2 * time.Second
	var index uint64
	wait := firstWait
	var last time.Time // when the previous listing started
	for {
		if !last.IsZero() && !sleep(ctx, opts.MinSpacing-time.Since(last)) {
			return nil
		}
		last = time.Now()
		s, err := c.Watch(ctx, index)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if opts.OnError != nil && !opts.OnError(err) {
				return err
			}
			// Jittered between wait/2 and wait, so that many followers of
			// one agent do not come back in step.
			d := wait/2 + rand.N(wait/2+1)
			wait = min(2*wait, maxWait)
			if !sleep(ctx, d) {
				return nil
			}
			continue
		}
		wait = firstWait
		if index != 0 && s.Index == index {
			continue // a blocking query that timed out
		}
		index = NextIndex(index, s.Index)
		if err := fn(s); err != nil {
			if errors.Is(err, ErrStopFollowing) {
				return nil
			}
			return err
		}
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
