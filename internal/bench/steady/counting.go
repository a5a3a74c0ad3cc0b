package steady

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// acquireCounter wraps one worker's coordinator and counts its Acquire
// calls: shards asked for, shards granted, and calls that failed. A shard
// asked for and not granted is a failed acquire attempt: another session
// held it, or it was in lock-delay (Consul refused its lock and the
// transaction was retried without it).
type acquireCounter struct {
	shard.Coordinator
	calls, asked, granted, errors, inflight atomic.Int64
}

// Acquire counts the call and what it asks for before sending it: the
// benchmark reads the counters as soon as an observer sees every shard
// owned, which can be before the call that took the last shards has
// returned. settled then waits for such calls to finish.
func (a *acquireCounter) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	a.calls.Add(1)
	a.asked.Add(int64(len(want)))
	a.inflight.Add(1)
	defer a.inflight.Add(-1)
	claims, err := a.Coordinator.Acquire(ctx, id, want)
	a.granted.Add(int64(len(claims)))
	if err != nil {
		a.errors.Add(1)
	}
	return claims, err
}

// settled waits (at most a second) until no Acquire is in flight, so that
// granted counts match asked ones.
func (a *acquireCounter) settled() {
	for deadline := time.Now().Add(time.Second); a.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// failed is the number of shards asked for and not granted.
func (a *acquireCounter) failed() int64 { return a.asked.Load() - a.granted.Load() }
