package fleetview

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Follow runs blocking queries on the coordinator one after another and
// calls fn with every snapshot whose index moved (the first one at once),
// following shard.NextIndex's rules. A failed query is passed to onError:
// when onError returns false, or returns for fn's error, Follow returns that
// error; otherwise it retries with jittered exponential backoff (100 ms to
// 5 s). It returns nil when ctx ends.
func Follow(ctx context.Context, c shard.Coordinator, fn func(shard.Snapshot) error, onError func(error) bool) error {
	var index uint64
	wait := 100 * time.Millisecond
	for {
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
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
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

// ErrStop, returned by Follow's fn, ends Follow with a nil error.
var ErrStop = errors.New("fleetview: stop following")
