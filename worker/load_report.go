package worker

import (
	"context"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// loadChange is the smallest change worth a write of the loads key, as a
// fraction of the worker's total load (loadChanged).
const loadChange = 0.05

// reportLoad is the loop's tick every Config.LoadReportEvery: it samples
// the meters of the shards running now, sets the load gauges and, when a
// figure changed noticeably (loadChanged), writes them to this worker's
// loads key (Coordinator.ReportLoad): one write, at most one per interval.
// The member key, where operators set drains and cordons, is not written,
// so a report can never overwrite an operator's mark.
func (lp *loop) reportLoad(ctx context.Context, now time.Time) {
	w := lp.w
	loads := w.load.meters.sample(now)
	w.m.load.observeOwn(loads, w.cfg.Weight)
	if w.leading.Load() == 0 {
		w.m.load.reset() // the fleet's spread is the assignor's to export
	}
	if !w.cfg.carriesLoad() {
		return
	}
	ls := &w.load
	ls.mu.Lock()
	var last map[shard.ID]float64
	if ls.writtenSession == lp.lease.session {
		last = ls.written
	}
	ls.mu.Unlock()
	if !loadChanged(last, loads) {
		w.m.load.writesSkipped.Inc()
		return
	}
	wctx, cancel := context.WithTimeout(ctx, w.cfg.Policy.RenewEvery)
	defer cancel()
	if err := w.cfg.Coordinator.ReportLoad(wctx, lp.lease.session, w.cfg.ID, loads); err != nil {
		w.log.Warn("writing the shards' loads failed; trying again at the next report", zap.Error(err))
		return
	}
	w.m.load.writes.Inc()
	ls.mu.Lock()
	ls.written, ls.writtenSession = loads, lp.lease.session
	ls.mu.Unlock()
}

// loadChanged reports whether cur differs from the last written loads
// enough for a write: a shard gained or dropped, the worker's total moved
// by more than loadChange of itself, or one shard's figure by more than
// loadChange of the total. The assignor balances workers' totals; a
// shard's figure matters to it only as a part of one. So the noise of
// many small shards, which mostly cancels in the total, writes nothing:
// at 100 shards a worker with ±20 % noise on each shard, smoothed, sees
// its total move well under 1 % between reports.
func loadChanged(last, cur map[shard.ID]float64) bool {
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
	if math.Abs(sumCur-sumLast) > loadChange*max(sumCur, sumLast) {
		return true
	}
	for id, v := range cur {
		if math.Abs(v-last[id]) > loadChange*sumCur {
			return true
		}
	}
	return false
}

// loadTimer is the loop's report tick: the first at a random point of
// the first interval, so that workers started together do not write
// together, then every LoadReportEvery (onLoadTick resets it). A worker
// that does not carry loads never ticks (its load gauges stay 0): its
// loop, its timers and the draws from its jitter are what they were
// before load balancing.
func (lp *loop) loadTimer() *time.Timer {
	if !lp.w.cfg.carriesLoad() {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return t
	}
	return time.NewTimer(lp.w.jitter.between(0, lp.w.cfg.loadEvery()))
}

// onLoadTick reports the loads and arms t for the next tick.
func (lp *loop) onLoadTick(ctx context.Context, now time.Time, t *time.Timer) {
	lp.reportLoad(ctx, now)
	t.Reset(lp.w.cfg.loadEvery())
}
