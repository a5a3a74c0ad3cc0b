package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/worker"
)

// restoringStream is stream with state that takes restore to rebuild
// (`shardd worker --restore`), as a stream aggregation's would: a handler
// that starts cold rebuilds it before it processes anything. It has no
// standby side (`--standby=false`), so every start is cold: the benchmarks'
// comparison for statefulStream. Neither keeps real state: the restore is a
// wait, which is what the benchmarks measure against.
type restoringStream struct {
	stream
	restore time.Duration
}

// Process rebuilds the state unless a standby left it warm, then runs the
// stream. The rebuild comes before "handler started": the shard processes
// nothing meanwhile.
func (s restoringStream) Process(ctx context.Context, c *worker.Claim) error {
	if c.Warm == nil || !c.Warm.CaughtUp {
		s.log.Info("restoring state", zap.String("shard", string(c.Shard)), zap.Duration("restore", s.restore))
		if !backoff.Sleep(ctx.Done(), s.restore) {
			return nil
		}
	}
	return s.stream.Process(ctx, c)
}

// statefulStream is restoringStream with a standby side (the default with
// --restore): the worker runs standbys that rebuild the state ahead, so
// that a warm move or a promotion starts processing at once.
type statefulStream struct {
	restoringStream
}

// Standby rebuilds the state, then follows the owner's commits, reporting
// itself caught up to each: it reads the checkpoint, never writes.
func (s statefulStream) Standby(ctx context.Context, sc *worker.StandbyClaim) error {
	if !backoff.Sleep(ctx.Done(), s.restore) {
		return nil
	}
	for {
		cp, err := sc.Committed(ctx)
		if err == nil {
			sc.Report(cp.Offset, true)
		}
		if !backoff.Sleep(ctx.Done(), s.commitEvery) {
			return nil
		}
	}
}
