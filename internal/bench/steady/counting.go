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

// countAcquires returns c with its Acquire calls counted.
func countAcquires(c shard.Coordinator) *acquireCounter {
	a := &acquireCounter{}
	a.Coordinator = shard.Intercept(c, a.intercept)
	return a
}

// Acquire counts the call and what it asks for before sending it: the
// benchmark reads the counters as soon as an observer sees every shard
// owned, which can be before the call that took the last shards has
// returned. settled then waits for such calls to finish.
func (a *acquireCounter) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op != shard.OpAcquire {
		return invoke(ctx)
	}
	a.calls.Add(1)
	a.asked.Add(int64(len(call.Locks)))
	a.inflight.Add(1)
	defer a.inflight.Add(-1)
	err := invoke(ctx)
	a.granted.Add(int64(len(call.Grants)))
	if err != nil {
		a.errors.Add(1)
	}
	return err
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
