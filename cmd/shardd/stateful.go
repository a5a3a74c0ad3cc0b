package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/worker"
)

// statefulStream is stream with state that takes restore to rebuild (`shardd
// worker --restore`), as a stream aggregation's would: a handler that
// starts cold rebuilds it before it processes anything, and the worker
// runs a standby side that rebuilds it ahead, so that a warm move or a
// promotion starts processing at once. Neither side keeps real state: the
// restore is a wait, which is what the benchmarks measure against.
type statefulStream struct {
	stream
	restore time.Duration
}

// Process rebuilds the state unless the standby left it warm, then runs
// the stream. The rebuild comes before "handler started": the shard
// processes nothing meanwhile.
func (s statefulStream) Process(ctx context.Context, c *worker.Claim) error {
	if c.Warm == nil || !c.Warm.CaughtUp {
		s.log.Info("restoring state", zap.String("shard", string(c.Shard)), zap.Duration("restore", s.restore))
		t := time.NewTimer(s.restore)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	return s.stream.Process(ctx, c)
}

// Standby rebuilds the state, then follows the owner's commits, reporting
// itself caught up to each: it reads the checkpoint, never writes.
func (s statefulStream) Standby(ctx context.Context, sc *worker.StandbyClaim) error {
	t := time.NewTimer(s.restore)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	for {
		cp, err := sc.Committed(ctx)
		if err == nil {
			sc.Report(cp.Offset, true)
		}
		t.Reset(s.commitEvery)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
