package fleetview

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// MinSpacing is the least time between the starts of two listings made by
// one Follow. Each listing is the whole prefix (at 10,000 shards, megabytes
// for Consul to encode), and a busy fleet moves the index many times a
// second, so without a floor every dashboard and shardctl watch would list
// continuously. With it a follower lists at most four times a second, and a
// burst of writes within 250 ms costs it one listing; a change after a quiet
// spell is still seen at once (the blocking query returns when it happens).
const MinSpacing = 250 * time.Millisecond

// Follow runs blocking queries on the coordinator one after another, their
// starts at least MinSpacing apart, and calls fn with every snapshot whose
// index moved (the first one at once), following shard.NextIndex's rules.
// A failed query is passed to onError:
// when onError returns false, or returns for fn's error, Follow returns that
// error; otherwise it retries with jittered exponential backoff (100 ms to
// 5 s). It returns nil when ctx ends.
func Follow(ctx context.Context, c shard.Coordinator, fn func(shard.Snapshot) error, onError func(error) bool) error {
	var index uint64
	wait := 100 * time.Millisecond
	var last time.Time // when the previous listing started
	for {
		if !last.IsZero() && !sleep(ctx, MinSpacing-time.Since(last)) {
			return nil
		}
		last = time.Now()
		s, err := c.Watch(ctx, index)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if onError != nil && !onError(err) {
				return err
			}
			// Full jitter between wait/2 and wait, so that many watchers
			// of one agent do not come back in step.
			d := wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
			wait = min(2*wait, 5*time.Second)
			if !sleep(ctx, d) {
				return nil
			}
			continue
		}
		wait = 100 * time.Millisecond
		if index != 0 && s.Index == index {
			continue
		}
		index = shard.NextIndex(index, s.Index)
		if err := fn(s); err != nil {
			if errors.Is(err, ErrStop) {
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

// ErrStop, returned by Follow's fn, ends Follow with a nil error.
var ErrStop = errors.New("fleetview: stop following")
