package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// runner is one shard's handler goroutine as the loop sees it.
type runner struct {
	claim    shard.Claim
	state    ShardState
	since    time.Time
	cancel   context.CancelCauseFunc // the handler's context; nil once it returned
	auth     *authority
	drainBy  time.Time // when revoking: the claim is lost if the handler has not returned by then
	revokeBy string    // when revoking: why (rebalance, drain, shutdown)
	overdue  bool      // when revoking: drainBy passed, authority ended, waiting for the handler
	// drainTimer ends the authority at drainBy; stopped when the handler returns.
	drainTimer *time.Timer
}

// exit is a runner's last word.
type exit struct {
	shard shard.ID
	token shard.Token
	err   error // non-nil: the fence showed the claim was already stale
}

// loop is the one goroutine that owns a term's state. The watcher and the
// runners send it events; everything it decides comes from the latest
// snapshot and its own runners.
type loop struct {
	w     *Worker
	lease *lease

	snaps chan shard.Snapshot // latest snapshot wins (buffer 1)
	// planned tells the watcher that the loop has planned from the
	// snapshot it handed over (buffer 1; see watch).
	planned chan struct{}
	exits   chan exit
	closed  chan struct{} // closed when run returns, so late runners do not block

	snap       *shard.Snapshot
	runners    map[shard.ID]*runner
	takeAfter  map[shard.ID]orphan // free shards: when a non-designated worker may take them
	stuck      map[string]stuck    // designated acquirers this worker took shards over from
	state      State
	roundTimer *time.Timer
	// warm is set by the first rebalance round, or by a first snapshot in
	// which every shard is held by a live member (see established). Until
	// then the worker acquires nothing: workers of a fleet that starts
	// together all join within that jittered quiet period, so each takes
	// its own share at once instead of the first one grabbing everything
	// and handing most of it off again.
	warm bool
	// lastRound and nextRound are when the previous round ran and the
	// next is due (see roundSoon).
	lastRound, nextRound time.Time
	// retryTimer re-plans at retryAt (zero when not armed) after a refused
	// acquisition; refusals counts them in a row (see retryRefused).
	retryTimer *time.Timer
	retryAt    time.Time
	refusals   int
	// digested is the view of snapshot digestedFor (see digest).
	digested    view
	digestedFor *shard.Snapshot
}

// orphan is a free shard targeted at another worker, as this worker first
// saw it free: the key's index then, and when the orphan grace ends. Any
// later write to the key (an acquisition, a release, an expiry) changes the
// index, so the grace counts from the shard's latest becoming free, never
// from an older one.
type orphan struct {
	token shard.Token
	after time.Time
}

// stuck marks a live member that let a shard designated to it sit free past
// the orphan grace, so this worker took the shard over. Until the mark ends,
// and while the member keeps the same session, this worker hands it nothing
// in rebalance rounds (it would only leave the shard free for another grace)
// and takes over its orphans beyond its own quota, MaxMovesPerRound per plan
// (the budget keeps a merely slow acquirer, as in a large cold start, from
// being stampeded).
type stuck struct {
	session shard.SessionID
	until   time.Time
}

func newLoop(w *Worker, l *lease) *loop {
	return &loop{
		w: w, lease: l,
		snaps:     make(chan shard.Snapshot, 1),
		planned:   make(chan struct{}, 1),
		exits:     make(chan exit),
		closed:    make(chan struct{}),
		runners:   map[shard.ID]*runner{},
		takeAfter: map[shard.ID]orphan{},
		stuck:     map[string]stuck{},
		state:     StateActive,
	}
}

func (lp *loop) run(ctx context.Context) error {
	defer close(lp.closed)
	watchCtx, stopWatch := context.WithCancel(lp.lease.ctx)
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); lp.watch(watchCtx) }()
	defer func() { stopWatch(); <-watchDone }()

	first := lp.w.jitter.around(lp.w.cfg.RoundEvery)
	lp.roundTimer = time.NewTimer(first)
	lp.lastRound, lp.nextRound = time.Now(), time.Now().Add(first)
	defer lp.roundTimer.Stop()
	lp.retryTimer = time.NewTimer(time.Hour)
	lp.retryTimer.Stop()
	defer lp.retryTimer.Stop()
	lp.publish()
	for {
		select {
		case <-ctx.Done():
			lp.shutdown(ctx)
			return nil
		case <-lp.lease.ctx.Done():
			return lp.stepDown(ctx)
		case s := <-lp.snaps:
			prev := lp.snap
			lp.snap = &s
			lp.w.m.watchWakeups.Inc()
			switch now := time.Now(); {
			case !lp.warm && established(lp.snap, lp.w.shards):
				lp.warm = true
			case lp.warm && prev != nil && membersChanged(prev, lp.snap):
				lp.roundSoon(now)
			}
			lp.replan(false)
			select {
			case lp.planned <- struct{}{}:
			default:
			}
		case <-lp.roundTimer.C:
			lp.warm = true
			lp.endOverdue()
			lp.replan(true)
			now := time.Now()
			lp.lastRound = now
			lp.setRound(lp.w.jitter.around(lp.w.cfg.RoundEvery), now)
		case <-lp.retryTimer.C:
			lp.retryAt = time.Time{}
			lp.replan(false)
		case e := <-lp.exits:
			lp.onExit(e)
		}
	}
}

// watch runs one blocking query after another and hands the loop the latest
// snapshot, coalescing bursts: at most one wake-up per WatchCoalesce.
func (lp *loop) watch(ctx context.Context) {
	retry := backoff{base: 50 * time.Millisecond, max: 5 * time.Second, j: lp.w.jitter}
	var index uint64
	var problems seenProblems // logged once per term while they stay
	for {
		s, err := lp.w.cfg.Coordinator.Watch(ctx, index)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			wait := retry.next()
			lp.w.log.Warn("watch failed; retrying", zap.Error(err), zap.Duration("in", wait))
			if !sleepCtx(ctx.Done(), wait) {
				return
			}
			continue
		}
		retry.reset()
		if index != 0 && s.Index == index {
			continue // a blocking query that timed out: nothing changed
		}
		index = shard.NextIndex(index, s.Index)
		lp.w.m.problems.Set(float64(len(s.Problems)))
		for _, p := range problems.fresh(s.Problems) {
			lp.w.log.Warn("the coordinator reports a problem under the fleet prefix (ignored, never taken as an owner or a config)", zap.String("problem", p))
		}
		select { // replace an unread snapshot: only the latest matters
		case <-lp.snaps:
		default:
		}
		select { // a signal left from a replaced snapshot
		case <-lp.planned:
		default:
		}
		lp.snaps <- s
		// List again only once the loop has planned from this snapshot:
		// a listing it would replace unread is wasted on the agent and
		// here. At 100 workers × 10,000 shards on one machine, listings
		// (2.8 MB each) outran the plans and starved the renewals until
		// the workers stepped down.
		select {
		case <-lp.planned:
		case <-ctx.Done():
			return
		}
		if !sleepCtx(ctx.Done(), watchSpacing(s, lp.w.cfg.WatchCoalesce, lp.w.cfg.WatchKeyRate)) {
			return
		}
	}
}

// watchSpacing is how long the watcher waits after a wake-up on s: at
// least coalesce, and long enough that the fleet's live members, each
// reading all of s's keys, ask for no more than keyRate keys per second
// together (see Config.WatchKeyRate).
func watchSpacing(s shard.Snapshot, coalesce time.Duration, keyRate float64) time.Duration {
	if keyRate <= 0 {
		return coalesce
	}
	live := 0
	for _, m := range s.Members {
		if m.Live() {
			live++
		}
	}
	keys := float64(len(s.Members) + len(s.Shards))
	return max(coalesce, time.Duration(float64(live)*keys/keyRate*float64(time.Second)))
}

func (lp *loop) publish() { lp.w.publish(lp.state, lp.lease.session, lp.runners) }

// opCtx bounds one coordinator call made by the loop: it ends with the term.
func (lp *loop) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(lp.lease.ctx, lp.w.cfg.Policy.StepDownAfter())
}

// start launches the runner of a granted claim.
func (lp *loop) start(c shard.Claim) {
	auth := newAuthority(lp.lease)
	ctx, cancel := context.WithCancelCause(auth.ctx)
	lp.runners[c.Shard] = &runner{claim: c, state: ShardOwned, since: time.Now(), cancel: cancel, auth: auth}
	go func() {
		err := lp.w.runShard(ctx, auth, c)
		cancel(nil)
		auth.end(nil)
		select {
		case lp.exits <- exit{shard: c.Shard, token: c.Token, err: err}:
		case <-lp.closed:
		}
	}()
}

// revoke asks a runner to hand its shard off.
func (lp *loop) revoke(r *runner, why string) {
	if r.state != ShardOwned {
		return
	}
	r.state = ShardRevoking
	r.revokeBy = why
	drain := lp.w.cfg.DrainTimeout
	r.drainBy = time.Now().Add(drain)
	// The claim's authority ends exactly at the drain timeout, not at the
	// next round: a handler overrunning it is told at once (Claim.Lost).
	auth := r.auth
	r.drainTimer = time.AfterFunc(drain, func() {
		auth.lose(fmt.Sprintf("the handler did not return within the drain timeout %v", drain))
	})
	r.cancel(fmt.Errorf("%w: %s", ErrRevoked, why))
	lp.w.log.Info("revoking shard", zap.String("shard", string(r.claim.Shard)), zap.String("why", why))
}

// lose marks a runner's shard as lost: its authority is already gone.
func (lp *loop) lose(r *runner, why string) {
	if r.state != ShardOwned && r.state != ShardRevoking {
		return
	}
	r.state = ShardLost
	r.auth.lose(why)
	lp.w.m.losses.WithLabelValues("taken").Inc()
	lp.w.log.Warn("shard lost", zap.String("shard", string(r.claim.Shard)), zap.Uint64("token", uint64(r.claim.Token)), zap.String("why", why))
}

// release unlocks shards in one coordinator call.
func (lp *loop) release(ids []shard.ID, why string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := lp.opCtx()
	defer cancel()
	if err := lp.w.cfg.Coordinator.Release(ctx, lp.lease.session, ids, why); err != nil {
		lp.w.log.Warn("release failed; the shards stay held until the next round or the session ends",
			zap.Int("shards", len(ids)), zap.Error(err))
		return
	}
	lp.w.m.releases.WithLabelValues(why).Add(float64(len(ids)))
}

func (lp *loop) onExit(e exit) {
	r, ok := lp.runners[e.shard]
	if !ok || r.claim.Token != e.token {
		return
	}
	delete(lp.runners, e.shard)
	if r.drainTimer != nil {
		r.drainTimer.Stop()
	}
	switch {
	case r.state == ShardRevoking:
		lp.release([]shard.ID{e.shard}, r.revokeBy)
	case e.err != nil:
		lp.w.m.losses.WithLabelValues("fence_rejected").Inc()
		lp.release([]shard.ID{e.shard}, "fence_rejected")
	}
	lp.publish()
}

// endOverdue reports revoked claims whose handlers overran the drain
// timeout. Their authority already ended then (revoke's timer): Claim.Lost
// closed, commits are refused, a shardd run child was killed. The lock
// stays held until the handler returns (onExit releases it then), because
// releasing it under a running handler would let the next owner start
// beside it.
func (lp *loop) endOverdue() {
	now := time.Now()
	for id, r := range lp.runners {
		if r.state == ShardRevoking && !r.overdue && now.After(r.drainBy) {
			r.overdue = true
			lp.w.m.losses.WithLabelValues("drain_timeout").Inc()
			lp.w.log.Warn("handler did not return within the drain timeout: its claim is lost, the lock is kept until it returns",
				zap.String("shard", string(id)), zap.Duration("drain_timeout", lp.w.cfg.DrainTimeout))
		}
	}
}

// awaitRunners waits until every runner has exited or until wait has
// passed, whichever is first, and reports whether all have exited.
func (lp *loop) awaitRunners(wait time.Duration) bool {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for lp.running() > 0 {
		select {
		case e := <-lp.exits:
			if r, ok := lp.runners[e.shard]; ok && r.claim.Token == e.token {
				if r.state != ShardLost {
					r.state = ShardReleased
				}
				r.cancel = nil
			}
		case <-deadline.C:
			return false
		}
	}
	return true
}

func (lp *loop) running() int {
	n := 0
	for _, r := range lp.runners {
		if r.cancel != nil {
			n++
		}
	}
	return n
}

// shutdown drains every shard, releases them in one batch and destroys the
// session, so the next owners start within a watch round.
//
// A handler still running after the drain timeout loses its claim (Lost
// closes, commits are refused) and gets one renewal interval more to
// return. If it still has not, its shard is not released: destroying the
// session leaves it locked for the lock-delay instead, which covers a
// handler that returns within it.
func (lp *loop) shutdown(ctx context.Context) {
	lp.state = StateDraining
	for _, r := range lp.runners {
		lp.revoke(r, "shutdown")
	}
	lp.publish()
	if !lp.awaitRunners(lp.w.cfg.DrainTimeout) {
		for _, r := range lp.runners {
			if r.cancel != nil {
				r.auth.lose(fmt.Sprintf("the handler did not return within the drain timeout %v at shutdown", lp.w.cfg.DrainTimeout))
			}
		}
		if !lp.awaitRunners(lp.w.cfg.Policy.RenewEvery) {
			lp.w.log.Error("handlers still running after the drain timeout and their loss: their shards are left to the lock-delay",
				zap.Int("handlers", lp.running()), zap.Duration("lock_delay", lp.w.cfg.Policy.EffectiveLockDelay()))
		}
	}
	held := lp.heldByMe()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lp.w.cfg.Policy.RenewEvery)
	defer cancel()
	if len(held) > 0 {
		if err := lp.w.cfg.Coordinator.Release(ctx, lp.lease.session, held, "shutdown"); err == nil {
			lp.w.m.releases.WithLabelValues("shutdown").Add(float64(len(held)))
		}
	}
	lp.w.destroy(ctx, lp.lease.session)
	lp.lease.end(fmt.Errorf("%w: worker stopped", ErrRevoked))
	lp.runners = map[shard.ID]*runner{}
	lp.w.log.Info("stopped: every shard released", zap.Int("shards", len(held)))
}

// heldByMe lists the shards this term may release: those of its runners
// whose handlers have returned, and any the latest snapshot shows under
// its session without a runner.
func (lp *loop) heldByMe() []shard.ID {
	seen := map[shard.ID]bool{}
	var ids []shard.ID
	for id, r := range lp.runners {
		seen[id] = true
		if r.state != ShardLost && r.cancel == nil {
			ids = append(ids, id) // its handler has returned
		}
	}
	if lp.snap != nil {
		for _, s := range lp.snap.Shards {
			if s.Session == lp.lease.session && !seen[s.Shard] {
				ids = append(ids, s.Shard)
			}
		}
	}
	return ids
}

// stepDown ends a term whose authority is gone: every shard context already
// carries ErrLost (they derive from the lease). Wait for the handlers, then
// destroy the session in case the coordinator still thinks it is alive.
func (lp *loop) stepDown(ctx context.Context) error {
	cause := context.Cause(lp.lease.ctx)
	lp.w.m.stepDowns.Inc()
	n := 0
	for _, r := range lp.runners {
		if r.state == ShardOwned || r.state == ShardRevoking {
			r.state = ShardLost
			n++
		}
	}
	lp.w.m.losses.WithLabelValues("step_down").Add(float64(n))
	lp.state = StateJoining
	lp.publish()
	lp.w.log.Error("stepped down: every shard lost", zap.Int("shards", n), zap.Error(cause))
	if !lp.awaitRunners(lp.w.cfg.DrainTimeout) {
		lp.w.log.Warn("handlers still running after a step-down and the drain timeout", zap.Int("handlers", lp.running()))
	}
	lp.w.destroy(ctx, lp.lease.session)
	if cause == nil {
		cause = errors.New("lease ended")
	}
	return cause
}
