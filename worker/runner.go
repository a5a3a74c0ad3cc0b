package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/internal/lease"
	"github.com/shardlease/shardlease/shard"
)

// runner is one shard's handler goroutine as the loop sees it.
type runner struct {
	claim    shard.Claim
	state    ClaimState
	since    time.Time
	cancel   context.CancelCauseFunc // the handler's context; nil once it returned
	auth     *lease.Authority
	drainBy  time.Time    // when revoking: the claim is lost if the handler has not returned by then
	revokeBy shard.Reason // when revoking: why (rebalance, drain, load, shutdown)
	overdue  bool         // when revoking: drainBy passed, authority ended, waiting for the handler
	// drainTimer ends the authority at drainBy; stopped when the handler returns.
	drainTimer *time.Timer
	// closing asks the handler to close the shard for a reshard
	// (Claim.Closing), while the assignment does.
	closing *closeSignal
}

// exit is a runner's last word.
type exit struct {
	shard shard.ID
	token shard.Token
	err   error // non-nil: the fence showed the claim was already stale
	// closed: the handler closed the shard for a reshard (Claim.Close).
	closed bool
}

func (lp *loop) publish() { lp.w.publish(lp.state, lp.lease.Session(), lp.runners, lp.standbys) }

// opCtx bounds one coordinator call made by the loop: it ends with the term.
func (lp *loop) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(lp.lease.Context(), lp.w.cfg.Policy.StepDownAfter())
}

// start launches the runner of a granted claim.
func (lp *loop) start(c shard.Claim) {
	auth := lease.NewAuthority(lp.lease)
	ctx, cancel := context.WithCancelCause(auth.Context())
	closing := newCloseSignal()
	r := &runner{claim: c, state: ShardOwned, since: time.Now(), cancel: cancel, auth: auth, closing: closing}
	lp.runners[c.Shard] = r
	if lp.assignment != nil && readable(*lp.assignment) && slices.Contains(lp.assignment.Assignment.Close, c.Shard) {
		lp.askClose(r) // its key asked before it was taken: the handler is told from its start
	}
	warm := lp.promote(c.Shard)
	tu := lp.w.turns.join(c.Shard) // behind the standby just promoted, and any earlier run
	go func() {
		err := lp.w.runShard(ctx, auth, c, tu, warm, closing)
		closed := errors.Is(err, errClosed)
		if closed {
			err = nil
		}
		cancel(nil)
		auth.End(nil)
		select {
		case lp.exits <- exit{shard: c.Shard, token: c.Token, err: err, closed: closed}:
		case <-lp.closed:
		}
	}()
}

// revoke asks a runner to hand its shard off.
func (lp *loop) revoke(r *runner, why shard.Reason) {
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
		auth.Lose(fmt.Sprintf("the handler did not return within the drain timeout %v", drain))
	})
	r.cancel(fmt.Errorf("%w: %s", ErrRevoked, why))
	lp.w.log.Info("revoking shard", zap.String("shard", string(r.claim.Shard)), zap.Stringer("why", why))
}

// lose marks a runner's shard as lost: its authority is already gone.
func (lp *loop) lose(r *runner, why string) {
	if r.state != ShardOwned && r.state != ShardRevoking {
		return
	}
	r.state = ShardLost
	r.auth.Lose(why)
	lp.w.m.losses.WithLabelValues("taken").Inc()
	lp.w.log.Warn("shard lost", zap.String("shard", string(r.claim.Shard)), zap.Uint64("token", uint64(r.claim.Token)), zap.String("why", why))
}

// release unlocks shards in one coordinator call, and reports whether it
// did.
func (lp *loop) release(ids []shard.ID, why shard.Reason) bool {
	if len(ids) == 0 {
		return true
	}
	ctx, cancel := lp.opCtx()
	defer cancel()
	if err := lp.w.cfg.Coordinator.Locks().Release(ctx, lp.lease.Session(), shard.ShardLocks(ids), why); err != nil {
		lp.w.log.Warn("release failed; the shards stay held until the next round or the session ends",
			zap.Int("shards", len(ids)), zap.Error(err))
		return false
	}
	lp.w.m.releases.WithLabelValues(why.String()).Add(float64(len(ids)))
	return true
}

// askClose tells r's handler to close its shard for a reshard.
func (lp *loop) askClose(r *runner) {
	if r.state != ShardOwned || !r.closing.ask() {
		return
	}
	lp.w.log.Info("closing shard for a reshard: its handler runs to its end", zap.String("shard", string(r.claim.Shard)))
}

// unaskClose withdraws the ask of a shard the assignment no longer asks
// to close (its reshard was cancelled): a Close after it is refused.
func (lp *loop) unaskClose(r *runner) {
	if r.closing.unask() {
		lp.w.log.Info("no longer closing shard: the reshard was cancelled", zap.String("shard", string(r.claim.Shard)))
	}
}

// pendingExits takes the exits already waiting, without blocking: the
// handlers of a worker that gave up many shards at once end together,
// and their shards are released in one call rather than one each.
func (lp *loop) pendingExits() []exit {
	var out []exit
	for {
		select {
		case e := <-lp.exits:
			out = append(out, e)
		default:
			return out
		}
	}
}

// onExits ends the runners of exits and releases what they held: a
// revoked shard for why it was revoked, a shard whose fence was refused as
// lost (and held back before it is acquired again). One Release call per
// reason.
func (lp *loop) onExits(exits []exit) {
	var reasons []shard.Reason
	release := map[shard.Reason][]shard.ID{}
	add := func(why shard.Reason, id shard.ID) {
		if _, ok := release[why]; !ok {
			reasons = append(reasons, why)
		}
		release[why] = append(release[why], id)
	}
	for _, e := range exits {
		r, ok := lp.runners[e.shard]
		if !ok || r.claim.Token != e.token {
			continue
		}
		delete(lp.runners, e.shard)
		if r.drainTimer != nil {
			r.drainTimer.Stop()
		}
		switch {
		case e.closed && r.state != ShardLost:
			add(shard.ReasonClosed, e.shard)
			lp.w.log.Info("closed shard for a reshard", zap.String("shard", string(e.shard)), zap.Uint64("token", uint64(e.token)))
		case r.state == ShardRevoking:
			add(r.revokeBy, e.shard)
		case e.err != nil:
			lp.w.m.losses.WithLabelValues("fence_rejected").Inc()
			add(shard.ReasonLost, e.shard)
			lp.fenceRefused(e.shard)
		}
		if e.err == nil {
			delete(lp.fenced, e.shard) // it fenced: a later refusal starts the pauses afresh
		}
	}
	for _, why := range reasons {
		ok := lp.release(release[why], why)
		if why == shard.ReasonClosed && ok {
			// Never taken again while the key asks to close it. A release
			// that failed leaves the lock with this session: the shard is
			// taken again (a write-free acquire) and its handler, told to
			// close at once, closes at its end again, and the release is
			// tried again.
			for _, id := range release[why] {
				lp.w.closed.add(id)
			}
		}
	}
	lp.publish()
}

// endOverdue reports revoked claims whose handlers overran the drain
// timeout. Their authority already ended then (revoke's timer): Claim.Lost
// closed, commits are refused, a shardd run child was killed. The lock
// stays held until the handler returns (onExits releases it then), because
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
	lp.resign(ctx)
	for _, r := range lp.runners {
		lp.revoke(r, shard.ReasonShutdown)
	}
	standbys := lp.cancelStandbys()
	lp.stopGuard()                    // the mark below must be the key's last write
	lp.announceLeave(ctx, time.Now()) // while the handlers drain
	lp.publish()
	if !lp.awaitRunners(lp.w.cfg.DrainTimeout) {
		for _, r := range lp.runners {
			if r.cancel != nil {
				r.auth.Lose(fmt.Sprintf("the handler did not return within the drain timeout %v at shutdown", lp.w.cfg.DrainTimeout))
			}
		}
		if !lp.awaitRunners(lp.w.cfg.Policy.RenewEvery) {
			lp.w.log.Error("handlers still running after the drain timeout and their loss: their shards are left to the lock-delay",
				zap.Int("handlers", lp.running()), zap.Duration("lock_delay", lp.w.cfg.Policy.EffectiveLockDelay()))
		}
	}
	lp.awaitStandbys(standbys, lp.w.cfg.Policy.RenewEvery) // cancelled with the revokes: they had the drain to return
	held := lp.heldByMe()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lp.w.cfg.Policy.RenewEvery)
	defer cancel()
	if len(held) > 0 {
		if err := lp.w.cfg.Coordinator.Locks().Release(ctx, lp.lease.Session(), shard.ShardLocks(held), shard.ReasonShutdown); err == nil {
			lp.w.m.releases.WithLabelValues(shard.ReasonShutdown.String()).Add(float64(len(held)))
		}
	}
	lp.lease.Destroy(ctx)
	lp.lease.End(fmt.Errorf("%w: worker stopped", ErrRevoked))
	lp.runners = map[shard.ID]*runner{}
	lp.w.log.Info("stopped: every shard released", zap.Int("shards", len(held)))
}

// drainBeforeStop starts a stop's drain (Config.DrainBeforeStop): it
// marks the member key draining, as an operator's drain does, so that the
// assignor moves every shard away, warm where it can; the loop goes on
// following the assignment until this worker owns nothing or d passes,
// then shuts down. The mark is retried, with backoff, while it may pass
// (shard.ErrUnavailable), within d; it reports false when it could not be
// written, and the stop then goes on at once: without the mark nothing
// would move, and waiting d would only delay a cold release.
func (lp *loop) drainBeforeStop(ctx context.Context, d time.Duration) bool {
	giveUp := time.Now().Add(d)
	m := lp.member
	m.Draining, m.Cordon = true, lp.w.cordon.Load()
	retry := backoff.Backoff{Base: 50 * time.Millisecond, Max: time.Second, J: lp.w.jitter}
	for {
		attempt, cancel := context.WithTimeout(ctx, lp.w.cfg.Policy.RenewEvery)
		err := lp.w.cfg.Coordinator.Members().Join(attempt, lp.lease.Session(), m)
		cancel()
		if err == nil {
			break
		}
		wait := retry.Next()
		if !errors.Is(err, shard.ErrUnavailable) || time.Now().Add(wait).After(giveUp) || lp.lease.Context().Err() != nil {
			lp.w.log.Warn("stopping: marking the member key draining failed; releasing every shard now instead",
				zap.Duration("drain_before_stop", d), zap.Error(err))
			return false
		}
		lp.w.log.Warn("stopping: marking the member key draining failed; retrying", zap.Error(err))
		time.Sleep(wait)
	}
	lp.w.draining.Store(true) // this worker's own mark, not an operator's
	lp.state = StateDraining
	lp.w.log.Info("stopping: draining first, so that the shards move one budget at a time (warm where their new owners run standbys)",
		zap.Int("shards", len(lp.runners)), zap.Duration("at_most", d))
	lp.publish()
	return true
}

// stoppedNow reports whether StopNow was called.
func (w *Worker) stoppedNow() bool {
	select {
	case <-w.stopNow:
		return true
	default:
		return false
	}
}

// ownsNothing reports whether this worker runs no handler and its
// assignment lists no shard: a drain before the stop is done.
func (lp *loop) ownsNothing() bool {
	return len(lp.runners) == 0 && (lp.assignment == nil || len(lp.assignment.Assignment.Shards) == 0)
}

// heldByMe lists the shards this term may release: those of its runners
// whose handlers have returned. (A shard the session holds without a runner
// — an Acquire whose answer was lost — is freed by the session's destroy.)
func (lp *loop) heldByMe() []shard.ID {
	var ids []shard.ID
	for id, r := range lp.runners {
		if r.state != ShardLost && r.cancel == nil {
			ids = append(ids, id) // its handler has returned
		}
	}
	return ids
}

// stepDown ends a term whose authority is gone: every shard context already
// carries ErrLost (they derive from the lease). Wait for the handlers, then
// destroy the session in case the coordinator still thinks it is alive.
func (lp *loop) stepDown(ctx context.Context) error {
	cause := context.Cause(lp.lease.Context())
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
	// A warning, not an error: losing the lease is a transition the worker
	// handles (it rejoins with a new session); the cause says what to look at.
	lp.w.log.Warn("stepped down: every shard lost", zap.Int("shards", n), zap.Error(cause))
	standbys := lp.cancelStandbys()
	lp.publish()
	if !lp.awaitRunners(lp.w.cfg.DrainTimeout) {
		lp.w.log.Warn("handlers still running after a step-down and the drain timeout", zap.Int("handlers", lp.running()))
	}
	lp.awaitStandbys(standbys, lp.w.cfg.Policy.RenewEvery)
	lp.lease.Destroy(ctx)
	if cause == nil {
		cause = errors.New("lease ended")
	}
	return cause
}

// announceLeave marks this worker's member key before its shards are
// released. With a rejoin grace the mark is RejoinUntil, now + grace: the
// assignor keeps the worker's assignment, shards and all, for its return.
// Without one it is draining, so that the assignor's first listing after
// the release gives them to the others. A live member that is not draining
// keeps the free shards of its assignment (it is expected to take them), so
// without the mark the assignor would wait for the session's end: a second
// write and a second listing, each a large read at 10,000 shards
// (docs/design.md, "One assignor").
//
// The shards are released only after this returns, so the assignor sees
// the mark no later than the releases. Without a grace one attempt is
// enough: if it fails the session's end frees the member anyway. With a
// grace a failed mark costs every shard two moves (away at the release,
// back at the return), so it is retried, with backoff, while the handlers
// drain, for up to the drain timeout (at least one renewal interval), as
// long as the failure is one that may pass (shard.ErrUnavailable); only
// then does the stop go on without it.
func (lp *loop) announceLeave(ctx context.Context, now time.Time) {
	m := lp.member
	m.Cordon = lp.w.cordon.Load()
	grace := lp.w.cfg.RejoinGrace
	if grace > 0 {
		m.RejoinUntil = now.Add(grace)
		lp.w.log.Info("stopping for a restart: the assignor keeps this worker's shards for its return", zap.Time("rejoin_until", m.RejoinUntil))
	} else {
		m.Draining = true
		lp.w.draining.Store(true) // this worker's own mark, not an operator's: nothing to log
	}
	ctx = context.WithoutCancel(ctx)
	budget := lp.w.cfg.Policy.RenewEvery
	if grace > 0 {
		budget = max(budget, lp.w.cfg.DrainTimeout)
	}
	giveUp := now.Add(budget)
	retry := backoff.Backoff{Base: 50 * time.Millisecond, Max: time.Second, J: lp.w.jitter}
	for {
		deadline := time.Now().Add(lp.w.cfg.Policy.RenewEvery)
		if giveUp.Before(deadline) {
			deadline = giveUp
		}
		attempt, cancel := context.WithDeadline(ctx, deadline)
		err := lp.w.cfg.Coordinator.Members().Join(attempt, lp.lease.Session(), m)
		cancel()
		if err == nil {
			return
		}
		wait := retry.Next()
		if grace == 0 || !errors.Is(err, shard.ErrUnavailable) || time.Now().Add(wait).After(giveUp) {
			lp.w.log.Warn("marking the member key before the shards are released failed; they are placed as after a stop without a rejoin grace",
				zap.Duration("rejoin_grace", grace), zap.Error(err))
			return
		}
		lp.w.log.Warn("marking the member key before the shards are released failed; retrying while the handlers drain", zap.Error(err))
		time.Sleep(wait)
	}
}

// resign ends this worker's candidacy and, if it is the assignor, releases
// P/assignor at once (without lock-delay), so another worker takes the role
// while this one drains, and the shards it releases are given out again
// without waiting.
func (lp *loop) resign(ctx context.Context) {
	lp.stopCandidate()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lp.w.cfg.Policy.RenewEvery)
	defer cancel()
	if err := lp.w.assignor.Resign(ctx, lp.lease.Session()); err != nil {
		lp.w.log.Warn("resigning the assignor role failed; it ends with the session", zap.Error(err))
	}
}
