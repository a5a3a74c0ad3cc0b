package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/worker"
)

// stream is the synthetic workload of `shardd worker`: each owned shard
// consumes rate messages per second from where its checkpoint says, and
// commits its offset with the claim's token every commitEvery (jittered).
// On revocation it commits what it processed and returns; on loss, or when
// the fence rejects a commit, it returns without writing.
//
// Before each commit it asks its claim (Claim.Err) whether it may still
// act, as a handler must before any effect the fence does not cover: a
// process paused across its deadline learns of the loss there, on its
// first check after waking.
//
// Told its shard closes for a reshard (Claim.Closing), it commits what it
// processed as the shard's end (Claim.Close), logs "handler closed" and
// returns.
//
// It logs "handler started" and "handler stopped" with the shard and token
// at info level: the interval in which this process acted as the shard's
// owner, which the fleet tests check for overlaps across processes. With
// --history (history non-nil) it also records that interval and every
// commit it was allowed to make (offsetlog.Run), for the chaos suite's
// check that no two processes ever ran one shard at once.
type stream struct {
	rate        int
	commitEvery time.Duration
	log         *zap.Logger
	history     *offsetlog.Store // nil: no history
}

func (s stream) Process(ctx context.Context, c *worker.Claim) error {
	log := s.log.With(zap.String("shard", string(c.Shard)), zap.Uint64("token", uint64(c.Token)))
	// The claim is checked before the stream starts, the time read first
	// (as for each commit): a handler that begins late — after restoring
	// state, or waking from a pause — must not begin on a claim that ended.
	at := time.Now()
	if c.Err() != nil {
		return nil
	}
	run, err := s.history.StartRun(c.Shard, c.Token, at)
	if err != nil {
		return err // unrecorded, it must not run; the worker restarts it
	}
	defer run.End()
	log.Info("handler started", zap.Int64("offset", c.Start.Offset), zap.Bool("warm", c.Warm != nil && c.Warm.CaughtUp),
		zap.Int("parents", len(c.Parents)))
	offset, last := c.Start.Offset, time.Now()
	advance := func() {
		now := time.Now()
		offset += int64(now.Sub(last).Seconds() * float64(s.rate))
		last = now
	}
	// commit checks the claim, records the effect it is about to make, and
	// makes it. The time is read before the check, so the record says when
	// the claim, by its own clock, still allowed the act.
	commit := func(ctx context.Context) error {
		at := time.Now()
		if err := c.Err(); err != nil {
			return err
		}
		if err := run.Effect(at, offset); err != nil {
			return err
		}
		return c.Commit(ctx, offset)
	}
	tick := time.NewTimer(time.Duration(rand.Int64N(int64(s.commitEvery))))
	defer tick.Stop()
	for {
		select {
		case <-c.Closing():
			// Resharded away: a synthetic stream has no marker to reach, so
			// its end is what it processed now, committed as it closes.
			advance()
			at := time.Now()
			err := c.Err()
			if err == nil {
				err = run.Effect(at, offset)
			}
			if err == nil {
				err = c.Close(ctx, offset)
			}
			log.Info("handler closed", zap.Int64("offset", offset), zap.NamedError("error", err))
			if err != nil {
				<-ctx.Done() // not closed: the claim ended; the next owner closes it
			}
			return nil
		case <-ctx.Done():
			cause := context.Cause(ctx)
			if errors.Is(cause, worker.ErrRevoked) {
				// Handed off: commit what was processed. The lock is held
				// until this handler returns, so the commit is in time —
				// unless the drain timeout passed, which Err tells.
				advance()
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				if err := commit(cctx); err != nil {
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
		if err := commit(ctx); errors.Is(err, offsets.ErrStaleToken) || errors.Is(err, worker.ErrLost) {
			// A newer owner fenced the shard, or the claim's authority
			// ended: stop acting for it. The worker ends ctx (at once for
			// a loss; through its watch for a fence).
			<-ctx.Done()
			log.Info("handler stopped", zap.Int64("offset", offset), zap.NamedError("cause", err))
			return nil
		}
	}
}
