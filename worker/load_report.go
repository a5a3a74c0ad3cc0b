package worker

import (
	"context"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// loadChange is the smallest change worth a write of the loads key at the
// next report, as a fraction of the worker's total load (loadChanged).
const loadChange = 0.05

// A smaller change, down to loadSettle of the total, is written once the
// last write is loadSettleAfter report intervals old, and at every report
// for loadSettleAfter intervals after a shard's load moved to a new level
// (the other shards' figures are then likely still catching up with the
// same change in traffic): the assignor's view of a worker is never wrong
// by more than loadChange, and not for long by more than loadSettle.
// Without it a load that drifted by 4 % (a shard's smoothed figure still
// catching up with a change, say) stayed unwritten until something else
// moved: the assignor judged the band on it for good, and a worker it
// placed at 0.92 × the mean could carry 0.90.
const (
	loadSettle      = 0.01
	loadSettleAfter = 3
)

// reportLoad is the loop's tick every Config.LoadReportEvery: it samples
// the meters of the shards running now, sets the load gauges and, when a
// figure changed noticeably (loadChanged), writes them to this worker's
// loads key (Members.ReportLoad): one write per tick at most (loadClock
// bounds the ticks). The member key, where operators set drains and
// cordons, is not written, so a report can never overwrite an operator's
// mark. shifted is when a shard's load last moved to a new level (zero:
// never): for a while after it smaller changes are written (loadSettle).
func (lp *loop) reportLoad(ctx context.Context, now, shifted time.Time) {
	w := lp.w
	loads := w.load.meters.sample(now)
	w.m.load.observeOwn(loads, w.cfg.Weight)
	if !w.carriesLoad() {
		return
	}
	ls := &w.load
	ls.mu.Lock()
	var last map[shard.ID]float64
	if ls.writtenSession == lp.lease.Session() {
		last = ls.written
	}
	threshold := loadChange
	settling := loadSettleAfter * w.cfg.loadEvery()
	if now.Sub(ls.writtenAt) >= settling || (!shifted.IsZero() && now.Sub(shifted) < settling) {
		threshold = loadSettle
	}
	ls.mu.Unlock()
	if !loadChanged(last, loads, threshold) {
		w.m.load.writesSkipped.Inc()
		return
	}
	wctx, cancel := context.WithTimeout(ctx, w.cfg.Policy.RenewEvery)
	defer cancel()
	if err := w.cfg.Coordinator.Members().ReportLoad(wctx, lp.lease.Session(), w.cfg.ID, loads); err != nil {
		w.log.Warn("writing the shards' loads failed; trying again at the next report", zap.Error(err))
		return
	}
	w.m.load.writes.Inc()
	ls.mu.Lock()
	ls.written, ls.writtenSession, ls.writtenAt = loads, lp.lease.Session(), now
	ls.mu.Unlock()
}

// loadChanged reports whether cur differs from the last written loads
// enough for a write: a shard gained or dropped, the worker's total moved
// by more than threshold (loadChange, or loadSettle) of itself, or one
// shard's figure by more than threshold of the total. The assignor
// balances workers' totals; a shard's figure matters to it only as a part
// of one. So the noise of
// many small shards, which mostly cancels in the total, writes nothing:
// at 100 shards a worker with ±20 % noise on each shard, smoothed, sees
// its total move well under 1 % between reports.
func loadChanged(last, cur map[shard.ID]float64, threshold float64) bool {
	if len(cur) != len(last) {
		return true
	}
	if len(cur) == 0 {
		return false
	}
	sumCur, sumLast := 0.0, 0.0
	for id, v := range cur {
		old, ok := last[id]
		if !ok {
			return true
		}
		sumCur += v
		sumLast += old
	}
	if math.Abs(sumCur-sumLast) > threshold*max(sumCur, sumLast) {
		return true
	}
	for id, v := range cur {
		if math.Abs(v-last[id]) > threshold*sumCur {
			return true
		}
	}
	return false
}

// shiftReportDelay is how soon a report follows a new level (levelShift):
// long enough that the shifts of one burst (every shard of a worker whose
// traffic changes at once) go out in one write.
const shiftReportDelay = time.Second

// loadClock is the loop's report tick: the first at a random point of the
// first interval, so that workers started together do not write together,
// then every LoadReportEvery, and sooner once per interval when a shard's
// load moves to a new level, so the assignor sees it within a second or
// two instead of up to an interval later. So a worker writes its loads
// key at most twice per interval. A worker that does not carry loads
// never ticks (its load gauges stay 0): its loop, its timers and the
// draws from its jitter are what they were before load balancing. The
// clock starts when the worker's key first asks for loads (the fleet's
// policy turned load balancing on) and stops when it no longer does.
type loadClock struct {
	t       *time.Timer
	due     time.Time // when t fires; zero while it is stopped
	early   time.Time // when a shift last brought a report forward
	shifted time.Time // when a shard's load last moved to a new level
}

func (lp *loop) loadClock() *loadClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	c := &loadClock{t: t}
	lp.followLoads(context.Background(), time.Now(), c)
	return c
}

// carriesLoad reports whether the worker writes its loads now.
func (w *Worker) carriesLoad() bool { return w.cfg.carriesLoad(w.load.asked.Load()) }

// followLoads starts the clock, at a random point of the first interval,
// when the worker carries loads and it is stopped, and stops it when the
// worker no longer does, emptying its loads key: figures left there would
// be shown as current, and planned on if the fleet balanced load again
// before the next report.
func (lp *loop) followLoads(ctx context.Context, now time.Time, c *loadClock) {
	switch carries := lp.w.carriesLoad(); {
	case carries && c.due.IsZero():
		c.arm(now, lp.w.jitter.Between(0, lp.w.cfg.loadEvery()))
	case !carries && !c.due.IsZero():
		c.t.Stop()
		c.due = time.Time{}
		lp.clearLoads(ctx)
	}
}

// clearLoads writes an empty loads key over the figures this session
// wrote, and zeroes the load gauges.
func (lp *loop) clearLoads(ctx context.Context) {
	w := lp.w
	w.m.load.observeOwn(map[shard.ID]float64{}, w.cfg.Weight)
	ls := &w.load
	ls.mu.Lock()
	wrote := ls.writtenSession == lp.lease.Session() && len(ls.written) > 0
	ls.mu.Unlock()
	if !wrote {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, w.cfg.Policy.RenewEvery)
	defer cancel()
	if err := w.cfg.Coordinator.Members().ReportLoad(wctx, lp.lease.Session(), w.cfg.ID, map[shard.ID]float64{}); err != nil {
		w.log.Warn("emptying the loads key after the fleet stopped balancing load failed; its figures stay until the next report", zap.Error(err))
		return
	}
	ls.mu.Lock()
	ls.written = map[shard.ID]float64{}
	ls.mu.Unlock()
}

// arm sets the tick to fire in d.
func (c *loadClock) arm(now time.Time, d time.Duration) {
	c.t.Reset(d)
	c.due = now.Add(d)
}

// onLoadTick reports the loads and arms the next tick.
func (lp *loop) onLoadTick(ctx context.Context, now time.Time, c *loadClock) {
	c.due = time.Time{}
	lp.reportLoad(ctx, now, c.shifted)
	if lp.w.carriesLoad() {
		c.arm(now, lp.w.cfg.loadEvery())
	}
}

// onLoadShift brings the next report forward to shiftReportDelay from now
// when a shard's load moved to a new level, unless the tick is due sooner
// or a shift already brought one forward in the last interval (a load
// that keeps jumping is then carried at the regular rate).
func (lp *loop) onLoadShift(now time.Time, c *loadClock) {
	c.shifted = now
	every := lp.w.cfg.loadEvery()
	if c.due.IsZero() || !c.due.After(now.Add(shiftReportDelay)) ||
		(!c.early.IsZero() && now.Sub(c.early) < every) {
		return
	}
	c.early = now
	c.arm(now, shiftReportDelay)
}
