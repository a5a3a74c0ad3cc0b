package main

import (
	"context"
	"sync/atomic"

	"github.com/shardlease/shardlease/shard"
)

// acquireCounter wraps one worker's coordinator and counts its Acquire
// calls: shards asked for, shards granted, and calls that failed. A shard
// asked for and not granted is a failed acquire attempt: another session
// held it, or it was in lock-delay (Consul refused its lock and the
// transaction was retried without it).
type acquireCounter struct {
	shard.Coordinator
	calls, asked, granted, errors atomic.Int64
}

func (a *acquireCounter) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	claims, err := a.Coordinator.Acquire(ctx, id, want)
	a.calls.Add(1)
	a.asked.Add(int64(len(want)))
	a.granted.Add(int64(len(claims)))
	if err != nil {
		a.errors.Add(1)
	}
	return claims, err
}

// failed is the number of shards asked for and not granted.
func (a *acquireCounter) failed() int64 { return a.asked.Load() - a.granted.Load() }
