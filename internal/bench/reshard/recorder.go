package reshard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// recorder is the fleet's handler: it holds its shard until the claim
// ends or it is asked to close, then closes it at once, and records every
// run, ask and close by the worker's clock.
type recorder struct {
	mu     sync.Mutex
	runs   map[shard.ID][]span
	asked  map[shard.ID]time.Time
	closed map[shard.ID]time.Time
}

// span is one handler run; end is zero while it runs.
type span struct{ start, end time.Time }

func newRecorder() *recorder {
	return &recorder{runs: map[shard.ID][]span{}, asked: map[shard.ID]time.Time{}, closed: map[shard.ID]time.Time{}}
}

func (r *recorder) Process(ctx context.Context, c *worker.Claim) error {
	r.mu.Lock()
	i := len(r.runs[c.Shard])
	r.runs[c.Shard] = append(r.runs[c.Shard], span{start: time.Now()})
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.runs[c.Shard][i].end = time.Now()
		r.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return nil
	case <-c.Closing():
	}
	asked := time.Now()
	if err := c.Close(ctx, 1); err != nil {
		<-ctx.Done() // not closed: its next owner is asked again
		return nil
	}
	r.mu.Lock()
	r.asked[c.Shard], r.closed[c.Shard] = asked, time.Now()
	r.mu.Unlock()
	return nil
}

// firstStart is shard id's first handler start after t0 (zero: none).
func (r *recorder) firstStart(id shard.ID, t0 time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.runs[id] {
		if s.start.After(t0) {
			return s.start
		}
	}
	return time.Time{}
}

func (r *recorder) closedAt(id shard.ID) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed[id]
}

func (r *recorder) askedAt(id shard.ID) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked[id]
}

// waitStarted waits until every one of ids has started after t0 and
// returns the latest of those first starts.
func (r *recorder) waitStarted(ctx context.Context, ids []shard.ID, t0 time.Time, within time.Duration) (time.Time, error) {
	deadline := time.Now().Add(within)
	for {
		var last time.Time
		missing := 0
		for _, id := range ids {
			at := r.firstStart(id, t0)
			if at.IsZero() {
				missing++
			} else if at.After(last) {
				last = at
			}
		}
		if missing == 0 {
			return last, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%d of %d children not started within %v", missing, len(ids), within)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, context.Cause(ctx)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// uncovered is how long within [from, to) shard id had no handler
// running.
func (r *recorder) uncovered(id shard.ID, from, to time.Time) time.Duration {
	if !to.After(from) {
		return 0
	}
	r.mu.Lock()
	runs := slices.Clone(r.runs[id])
	r.mu.Unlock()
	slices.SortFunc(runs, func(a, b span) int { return a.start.Compare(b.start) })
	var gap time.Duration
	at := from
	for _, s := range runs {
		end := s.end
		if end.IsZero() {
			end = to
		}
		if !end.After(at) {
			continue
		}
		if s.start.After(at) {
			if s.start.After(to) {
				return gap + to.Sub(at)
			}
			gap += s.start.Sub(at)
		}
		if !end.Before(to) {
			return gap
		}
		at = end
	}
	return gap + to.Sub(at)
}
