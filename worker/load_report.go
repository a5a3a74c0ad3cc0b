package worker

import (
	"context"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// loadChange is the smallest change worth a write of the member record,
// as a fraction of the worker's total load (loadChanged).
const loadChange = 0.05

// reportLoad is the loop's tick every Config.LoadReportEvery: it samples
// the meters of the shards running now, sets the load gauges and, when a
// figure changed noticeably (loadChanged), rewrites this worker's member
// record m with them. The loop makes the write itself, between its other
// events, so it never races the loop's own writes of the key (the mark a
// stopping worker leaves): at most one write per interval, one key.
//
// An operator's drain or cordon is kept: the key is read just before the
// write and its marks copied. (A mark set in the one round trip between
// that read and the write would be overwritten; guardMember then sees the
// key without it, as if the operator had lifted it.)
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
	m := lp.member
	m.Draining, m.Cordon = w.draining.Load(), w.cordon.Load()
	wctx, cancel := context.WithTimeout(ctx, w.cfg.Policy.RenewEvery)
	defer cancel()
	if k, err := w.cfg.Coordinator.WatchMember(wctx, w.cfg.ID, 0); err == nil && k.Exists && k.Problem == "" && k.Member.Session == lp.lease.session {
		m.Draining, m.Cordon = k.Member.Draining, k.Member.Cordon
	}
	m.Load = loads
	if err := w.cfg.Coordinator.Join(wctx, lp.lease.session, m); err != nil {
		w.log.Warn("writing the shards' loads to the member key failed; trying again at the next report", zap.Error(err))
		return
	}
	w.m.load.writes.Inc()
	ls.mu.Lock()
	ls.written, ls.writtenSession = loads, lp.lease.session
	ls.mu.Unlock()
}

// writtenLoad is the Load this term last wrote, for a rewrite of the
// member key (guardMember) to carry it on; nil when none.
func (w *Worker) writtenLoad(session shard.SessionID) map[shard.ID]float64 {
	w.load.mu.Lock()
	defer w.load.mu.Unlock()
	if w.load.writtenSession != session {
		return nil
	}
	return w.load.written
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
