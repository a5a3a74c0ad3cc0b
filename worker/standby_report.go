package worker

import (
	"context"
	"maps"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// Standby reports reach the assignor through this worker's standby key
// (Members.ReportStandby). A change the assignor acts on — a standby
// started or ended, or one becoming ready or no longer ready — is written
// at most standbyReportGap after the last write; a change of Applied alone
// (what a promotion compares) once the last write is the load report
// interval old. So a warm move waits for its standby's readiness by about
// a watch's latency, and a standby that tails a busy stream writes its key
// no more often than the worker's loads.
const standbyReportGap = 100 * time.Millisecond

// standbyClock is the loop's schedule of standby reports: the timer of the
// next write, and what this term last wrote.
type standbyClock struct {
	t         *time.Timer
	due       time.Time // when t fires; zero while it is stopped
	written   map[shard.ID]shard.StandbyState
	wrote     bool // written is this term's (an empty key need not be written)
	writtenAt time.Time
}

func newStandbyClock() *standbyClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &standbyClock{t: t}
}

// standbyStates is what the standbys running now last reported: -1 and
// not ready for one that reported nothing yet.
func (lp *loop) standbyStates() map[shard.ID]shard.StandbyState {
	out := make(map[shard.ID]shard.StandbyState, len(lp.standbys))
	for id, r := range lp.standbys {
		s := shard.StandbyState{Applied: -1}
		if rep := r.claim.Last(); rep != nil {
			s = shard.StandbyState{Applied: max(rep.Applied, -1), Ready: rep.CaughtUp}
		}
		out[id] = s
	}
	return out
}

// reportStandbys writes the standby key when what the standbys report
// differs from what was written and the write is due (see
// standbyReportGap), and otherwise arms the clock for when it will be. A
// failed write is tried again after a renewal period.
func (lp *loop) reportStandbys(ctx context.Context, now time.Time, c *standbyClock) {
	cur := lp.standbyStates()
	if !c.wrote && len(cur) == 0 {
		return
	}
	gap, changed := standbyChange(c.written, cur)
	if !changed {
		return
	}
	if gap == 0 {
		gap = lp.w.cfg.loadEvery()
	}
	if at := c.writtenAt.Add(gap); now.Before(at) {
		c.arm(now, at.Sub(now))
		return
	}
	w := lp.w
	wctx, cancel := context.WithTimeout(ctx, w.cfg.Policy.RenewEvery)
	defer cancel()
	if err := w.cfg.Coordinator.Members().ReportStandby(wctx, lp.lease.Session(), w.cfg.ID, cur); err != nil {
		w.log.Warn("writing the standbys' states failed; trying again", zap.Error(err))
		c.arm(now, w.cfg.Policy.RenewEvery)
		return
	}
	c.written, c.wrote, c.writtenAt = cur, true, now
}

// standbyChange says whether cur differs from the states last written,
// and after how long a gap since that write it is to be written:
// standbyReportGap for a change the assignor acts on, 0 (the load
// report interval) for a change of Applied alone.
func standbyChange(last, cur map[shard.ID]shard.StandbyState) (time.Duration, bool) {
	if maps.Equal(last, cur) {
		return 0, false
	}
	if len(last) != len(cur) {
		return standbyReportGap, true
	}
	for id, s := range cur {
		old, ok := last[id]
		if !ok || old.Ready != s.Ready {
			return standbyReportGap, true
		}
	}
	return 0, true
}

// arm sets the clock to fire in d, unless it fires sooner already.
func (c *standbyClock) arm(now time.Time, d time.Duration) {
	at := now.Add(d)
	if !c.due.IsZero() && !c.due.After(at) {
		return
	}
	c.t.Reset(d)
	c.due = at
}

// onStandbyTick is the clock's firing: report what is due.
func (lp *loop) onStandbyTick(ctx context.Context, now time.Time, c *standbyClock) {
	c.due = time.Time{}
	lp.reportStandbys(ctx, now, c)
}
