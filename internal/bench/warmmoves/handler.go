package warmmoves

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/worker"
)

// restoring is the cost part's handler, in process: as `shardd worker
// --restore`'s, a cold start waits restore before processing, and the
// standby side waits restore and then follows the owner's commits. The
// owner commits every commitEvery, so a standby's applied offset moves
// and its worker reports it, as a real standby's would. It counts the
// handlers and standbys running, for the handler time standbys add.
type restoring struct {
	restore, commitEvery time.Duration
	owners, standbys     atomic.Int64
}

func (h *restoring) Process(ctx context.Context, c *worker.Claim) error {
	h.owners.Add(1)
	defer h.owners.Add(-1)
	if (c.Warm == nil || !c.Warm.CaughtUp) && !wait(ctx, h.restore) {
		return nil
	}
	offset := c.Start.Offset
	for wait(ctx, h.commitEvery) {
		offset++
		if err := c.Commit(ctx, offset); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

func (h *restoring) Standby(ctx context.Context, sc *worker.StandbyClaim) error {
	h.standbys.Add(1)
	defer h.standbys.Add(-1)
	if !wait(ctx, h.restore) {
		return nil
	}
	for {
		if cp, err := sc.Committed(ctx); err == nil {
			sc.Report(cp.Offset, true)
		}
		if !wait(ctx, h.commitEvery) {
			return nil
		}
	}
}

// wait waits d and reports true, or false when ctx ends first.
func wait(ctx context.Context, d time.Duration) bool { return backoff.Sleep(ctx.Done(), d) }
