package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/worker"
)

// stream is the synthetic workload of `shardd worker`: each owned shard
// consumes rate messages per second from where its checkpoint says, and
// commits its offset with the claim's token every commitEvery (jittered).
// On revocation it commits what it processed and returns; on loss, or when
// the fence rejects a commit, it returns without writing.
//
// It logs "handler started" and "handler stopped" with the shard and token
// at info level: the interval in which this process acted as the shard's
// owner, which the fleet tests check for overlaps across processes.
type stream struct {
	rate        int
	commitEvery time.Duration
	log         *zap.Logger
}

func (s stream) Process(ctx context.Context, c *worker.Claim) error {
	log := s.log.With(zap.String("shard", string(c.Shard)), zap.Uint64("token", uint64(c.Token)))
	log.Info("handler started", zap.Int64("offset", c.Start.Offset))
	offset, last := c.Start.Offset, time.Now()
	advance := func() {
		now := time.Now()
		offset += int64(now.Sub(last).Seconds() * float64(s.rate))
		last = now
	}
	tick := time.NewTimer(time.Duration(rand.Int64N(int64(s.commitEvery))))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			cause := context.Cause(ctx)
			if errors.Is(cause, worker.ErrRevoked) {
				// Handed off: commit what was processed. The lock is held
				// until this handler returns, so the commit is in time.
				advance()
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				if err := c.Commit(cctx, offset); err != nil {
					log.Warn("final commit failed", zap.Int64("offset", offset), zap.Error(err))
				}
				cancel()
			}
			log.Info("handler stopped", zap.Int64("offset", offset), zap.NamedError("cause", cause))
			return nil
		case <-tick.C:
			tick.Reset(s.commitEvery/2 + time.Duration(rand.Int64N(int64(s.commitEvery))))
		}
		advance()
		if err := c.Commit(ctx, offset); errors.Is(err, offsets.ErrStaleToken) {
			// A newer owner fenced the shard: stop acting for it. The worker
			// notices the loss through its watch and ends ctx.
			<-ctx.Done()
			log.Info("handler stopped", zap.Int64("offset", offset), zap.NamedError("cause", err))
			return nil
		}
	}
}
