package worker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/lease"
	"github.com/shardlease/shardlease/shard"
)

// loop is the one goroutine that owns a term's shard state. It follows one
// key, the worker's assignment (P/assign/<worker>), which the fleet's
// assignor writes: it acquires the assigned shards that are free, drains
// and releases the shards taken out of the assignment, and runs a handler
// per owned shard. The assignment is advice: a shard is owned while its lock
// is held, whatever any key says. The assignment watcher and the runners
// send the loop events.
type loop struct {
	w      *Worker
	lease  *lease.Lease
	member shard.Member // the registration this term wrote

	assigns chan shard.AssignmentKey // latest wins (buffer 1)
	exits   chan exit
	closed  chan struct{} // closed when run returns, so late runners do not block

	assignment *shard.AssignmentKey
	runners    map[shard.ID]*runner
	standbys   map[shard.ID]*standbyRunner // shards this worker prepares for, without their locks
	state      State
	// hadKey is set once this term has read its assignment key; keyGone
	// while the key has since been missing or unreadable (logged once).
	hadKey, keyGone bool
	// retryTimer reconciles again at retryAt (zero when not armed) after
	// Acquire refused assigned shards; refusals counts them in a row.
	retryTimer *time.Timer
	retryAt    time.Time
	refusals   int
	// fenced holds the shards whose last claim's fence the store refused:
	// when they may be acquired again, and how many refusals in a row. A
	// store whose floors are ahead of every token (the coordinator lost its
	// history) refuses every claim; without a pause the worker would lock,
	// fence and release as fast as the coordinator answers.
	fenced map[shard.ID]fenceBackoff
	// stopCandidate ends this worker's candidacy for the assignor (and its
	// term as assignor) and waits for it: shutdown calls it, then resigns.
	stopCandidate func()
	// stopGuard ends the watch on this worker's member key (guardMember)
	// and waits for it, so that a stopping worker's mark (announceLeave)
	// is the last write of the key: the guard, seeing the key unlocked by
	// the session's destroy, would otherwise write the registration again
	// over the mark.
	stopGuard func()
}

func newLoop(w *Worker, l *lease.Lease) *loop {
	return &loop{
		w: w, lease: l,
		assigns:  make(chan shard.AssignmentKey, 1),
		exits:    make(chan exit),
		closed:   make(chan struct{}),
		runners:  map[shard.ID]*runner{},
		standbys: map[shard.ID]*standbyRunner{},
		fenced:   map[shard.ID]fenceBackoff{},
		state:    StateActive,
	}
}

// overdueEvery is how often the loop looks for revoked handlers that
// overran the drain timeout, to report them (their claims were already
// lost at the timeout itself).
const overdueEvery = time.Second

func (lp *loop) run(ctx context.Context) error {
	defer close(lp.closed)
	watchCtx, stopWatch := context.WithCancel(lp.lease.Context())
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); lp.watchAssignment(watchCtx) }()
	defer func() { stopWatch(); <-watchDone }()

	lp.retryTimer = time.NewTimer(time.Hour)
	lp.retryTimer.Stop()
	defer lp.retryTimer.Stop()
	overdue := time.NewTicker(overdueEvery)
	defer overdue.Stop()
	loadTick := lp.loadClock()
	defer loadTick.t.Stop()
	shifts := lp.w.load.meters.shiftSignal()
	standbyTick := newStandbyClock()
	defer standbyTick.t.Stop()
	lp.publish()
	// stop is ctx's end until a drain before the stop starts; live is the
	// context of the loop's own calls, which go on during that drain.
	stop, live := ctx.Done(), ctx
	var drainEnd <-chan time.Time
	var stopNow <-chan struct{} // StopNow, once a drain before the stop runs
	for {
		select {
		case <-stop:
			if d := lp.w.cfg.DrainBeforeStop; d > 0 && lp.w.cfg.RejoinGrace == 0 && !lp.ownsNothing() && !lp.w.stoppedNow() && lp.drainBeforeStop(context.WithoutCancel(ctx), d) {
				stop, live = nil, context.WithoutCancel(ctx)
				t := time.NewTimer(d)
				defer t.Stop()
				drainEnd, stopNow = t.C, lp.w.stopNow
				continue
			}
			lp.shutdown(ctx)
			return nil
		case <-drainEnd:
			lp.w.log.Warn("stopping: the drain before the stop did not finish in time; releasing the rest", zap.Int("shards", len(lp.runners)))
			lp.shutdown(ctx)
			return nil
		case <-stopNow:
			lp.w.log.Warn("stopping now: the drain before the stop was cut short; releasing the rest", zap.Int("shards", len(lp.runners)))
			lp.shutdown(ctx)
			return nil
		case <-lp.lease.Context().Done():
			return lp.stepDown(live)
		case k := <-lp.assigns:
			lp.follow(k)
			lp.followLoads(live, time.Now(), loadTick)
			lp.w.m.watchWakeups.Inc()
			lp.reconcile()
			lp.reportStandbys(live, time.Now(), standbyTick)
		case <-lp.w.standbyWake:
			lp.reportStandbys(live, time.Now(), standbyTick)
		case now := <-standbyTick.t.C:
			lp.onStandbyTick(live, now, standbyTick)
		case <-lp.retryTimer.C:
			lp.retryAt = time.Time{}
			lp.reconcile()
			lp.reportStandbys(live, time.Now(), standbyTick)
		case <-overdue.C:
			lp.endOverdue()
		case now := <-loadTick.t.C:
			lp.onLoadTick(live, now, loadTick)
		case <-shifts:
			lp.onLoadShift(time.Now(), loadTick)
		case e := <-lp.exits:
			lp.onExits(append([]exit{e}, lp.pendingExits()...))
			lp.reconcile()
			lp.reportStandbys(live, time.Now(), standbyTick)
		}
		if drainEnd != nil && lp.ownsNothing() {
			lp.w.log.Info("stopping: the drain before the stop moved every shard away")
			lp.shutdown(ctx)
			return nil
		}
	}
}

// watchAssignment follows the worker's assignment key (shard.Follow) and
// hands the loop the latest answer. Its reads start at least
// Config.WatchCoalesce apart, so a burst of writes costs few reconciles.
// It reads one key: the cost of a change elsewhere in the fleet is nothing
// here. After a failed read Follow starts over from index 0 and may find
// the key as it was: that is no change, and is not handed over again.
func (lp *loop) watchAssignment(ctx context.Context) {
	watch := func(ctx context.Context, after uint64) (shard.AssignmentKey, error) {
		return lp.w.cfg.Coordinator.Assignments().Watch(ctx, lp.w.cfg.ID, after)
	}
	opts := shard.FollowOptions{MinSpacing: lp.w.cfg.WatchCoalesce, Jitter: lp.w.jitter.UpTo, OnError: func(err error) bool {
		lp.w.log.Warn("watching the assignment failed; retrying", zap.Error(err))
		return true
	}}
	var sent *uint64 // the index last handed over
	_ = shard.Follow(ctx, watch, opts, func(k shard.AssignmentKey) (time.Time, error) {
		if sent != nil && *sent == k.Index {
			return time.Time{}, nil
		}
		sent = &k.Index
		select { // replace an unread answer: only the latest matters
		case <-lp.assigns:
		default:
		}
		lp.assigns <- k
		return time.Time{}, nil
	})
}

// follow makes k the latest assignment and says, once, when the key goes
// missing or unreadable under a live worker, and when it is back.
func (lp *loop) follow(k shard.AssignmentKey) {
	lp.assignment = &k
	switch {
	case readable(k):
		lp.w.load.asked.Store(k.Assignment.Loads)
		if lp.keyGone {
			lp.w.log.Info("this worker's assignment key was written again; following it", zap.Int("shards", len(k.Assignment.Shards)))
		}
		lp.hadKey, lp.keyGone = true, false
	case lp.keyGone:
	case k.Problem != "":
		lp.keyGone = true
		lp.w.log.Warn("this worker's assignment key cannot be read (edited by hand?); keeping the shards it runs and starting none until the assignor writes it again",
			zap.String("problem", k.Problem), zap.Int("running", len(lp.runners)))
	case lp.hadKey:
		lp.keyGone = true
		lp.w.log.Warn("this worker's assignment key was deleted while it is live (by hand: the assignor deletes only the keys of workers that are not live); keeping the shards it runs and starting none until the assignor writes it again",
			zap.Int("running", len(lp.runners)))
	}
}

// readable reports whether k says what to run: it exists and its value
// reads as an assignment.
func readable(k shard.AssignmentKey) bool { return k.Exists && k.Problem == "" }

// reconcile brings the runners in line with the latest assignment. A key
// that is missing or unreadable decides nothing: only the assignor deletes
// keys, and only those of workers that are not live, so under a live
// worker it is a hand edit, and revoking on it would move every shard of
// the worker twice (out now, back when the assignor writes the key again).
// The worker keeps what it runs and starts nothing until the key is
// written. A key never written yet (a fresh worker) is the same: nothing
// runs, nothing starts.
func (lp *loop) reconcile() {
	// Draining is a stop's drain before the stop (Config.DrainBeforeStop):
	// the loop still follows the assignment, handing off what the assignor
	// moves. (shutdown's draining reconciles nothing: the loop has ended.)
	if lp.assignment == nil || lp.state != StateActive && lp.state != StateDraining {
		return
	}
	if !readable(*lp.assignment) {
		lp.publish()
		return
	}
	a := lp.assignment.Assignment
	want := make(map[shard.ID]bool, len(a.Shards))
	for _, id := range a.Shards {
		want[id] = true
	}
	free, asOf := a.Free, a.AsOf

	// Lost: the assignor saw free, after this worker took it (its snapshot
	// index is at or past the claim's token), a shard this worker runs: the
	// lock is gone (an operator released or deleted it). The index guard
	// keeps an assignment written before the claim from revoking it.
	for _, id := range free {
		if r, ok := lp.runners[id]; ok && (r.state == ShardOwned || r.state == ShardRevoking) && asOf >= r.claim.Token.Index() {
			lp.lose(r, fmt.Sprintf("its lock was released or deleted by someone else (seen free by the assignor at index %d)", asOf))
		}
	}

	closing := make(map[shard.ID]bool, len(a.Close))
	for _, id := range a.Close {
		closing[id] = true
		if r, ok := lp.runners[id]; ok && want[id] {
			lp.askClose(r)
		}
	}
	for id, r := range lp.runners {
		if !closing[id] {
			lp.unaskClose(r)
		}
	}

	for id, r := range lp.runners {
		if r.state == ShardOwned && !want[id] {
			why, ok := a.Release[id]
			if !ok {
				why = shard.Why{Reason: shard.ReasonRebalance}
			}
			lp.revoke(r, why.Reason)
			lp.w.m.moves.Inc()
		}
	}

	var acquire []shard.Acquisition
	now := time.Now()
	var later time.Time // the first shard held back after a refused fence
	// The key's shards are in the fleet's order (index ranges of the
	// config), so batches are stable; a worker of a large fleet walks its
	// share, not every shard, when its key changes.
	for _, id := range a.Shards {
		if _, busy := lp.runners[id]; busy || lp.w.closed.skip(id, closing) {
			continue
		}
		if b, ok := lp.fenced[id]; ok && now.Before(b.until) {
			if later.IsZero() || b.until.Before(later) {
				later = b.until
			}
			continue
		}
		acquire = append(acquire, shard.AcquireShard(id, lp.acquireReason(id)))
	}
	started := lp.acquire(acquire)
	lp.retryRefused(len(acquire) - len(started))
	lp.followStandbys(a.Standby)
	if !later.IsZero() && (lp.retryAt.IsZero() || later.Before(lp.retryAt)) {
		lp.retryAt = later
		lp.retryTimer.Reset(time.Until(later))
	}
	lp.publish()
}

// fenceBackoff is when a shard whose fence was refused may be acquired
// again, and how many refusals in a row it had.
type fenceBackoff struct {
	until time.Time
	n     int
}

// maxFenceBackoff caps the pause after refused fences: it is how long,
// at most, a worker takes to claim a shard again after an operator raised
// the fleet's generation (`shardctl recover`).
const maxFenceBackoff = 10 * time.Second

// fenceRefused holds shard id back after its claim's fence was refused:
// one renewal interval, doubling with each refusal in a row, at most
// maxFenceBackoff.
func (lp *loop) fenceRefused(id shard.ID) {
	b := lp.fenced[id]
	b.n++
	d := lp.w.cfg.Policy.RenewEvery
	for i := 1; i < b.n && d < maxFenceBackoff; i++ {
		d *= 2
	}
	b.until = time.Now().Add(min(d, maxFenceBackoff))
	lp.fenced[id] = b
}

// acquireReason is why the assignor gave the shard, as its key says; a
// shard the key lists without a reason (not free when the assignor wrote
// it) is ReasonFree.
func (lp *loop) acquireReason(id shard.ID) shard.Why {
	if lp.assignment != nil && lp.assignment.Exists {
		if why, ok := lp.assignment.Assignment.Why[id]; ok {
			return why
		}
	}
	return shard.Why{Reason: shard.ReasonFree}
}

// acquire locks the wanted shards it can and starts their runners; it
// returns the shards it started. A shard held by another session or in
// lock-delay is simply not granted. When Acquire fails, the claims it
// granted before the failure run, and the shards whose outcome is unknown
// are released, so that none stays locked by this session without a
// runner.
func (lp *loop) acquire(want []shard.Acquisition) []shard.ID {
	if len(want) == 0 {
		return nil
	}
	ctx, cancel := lp.opCtx()
	defer cancel()
	got, err := lp.w.cfg.Coordinator.Locks().Acquire(ctx, lp.lease.Session(), want)
	var started []shard.ID
	for _, c := range shard.Claims(got) {
		if _, busy := lp.runners[c.Shard]; busy {
			continue
		}
		lp.w.m.acquisitions.WithLabelValues(lp.acquireReason(c.Shard).Reason.String()).Inc()
		lp.w.log.Info("acquired shard", zap.String("shard", string(c.Shard)), zap.Uint64("token", uint64(c.Token)),
			zap.String("session", string(lp.lease.Session())))
		lp.start(c)
		started = append(started, c.Shard)
	}
	if err != nil {
		var unknown []shard.ID
		for _, a := range want {
			if id, _ := a.Lock.Shard(); !slices.Contains(started, id) {
				unknown = append(unknown, id)
			}
		}
		lp.w.log.Warn("acquire failed; running what it granted, releasing the rest in case it was granted unseen",
			zap.Int("shards", len(want)), zap.Int("granted", len(got)), zap.Error(err))
		lp.release(unknown, shard.ReasonLost)
	}
	return started
}

// retryRefused arms a reconcile after refused acquisitions. A shard that
// is assigned but not granted is nearly always in its previous owner's
// lock-delay (the assignor gave it out as soon as that owner's session
// ended, which starts the lock-delay): the delay began before the refusal,
// so it is over one lock-delay after it, and the first retry is then.
// Refusals after that (a lock still held by a previous session of a
// worker that rejoined, which must expire first; an assignment older than
// the locks) are retried every renewal interval, no slower: the assignor
// judges a worker stuck when it has not taken what it was given for
// Config.EffectiveStuckAfter, which counts on retries that close: a slower
// backoff can outlast the verdict and get a healthy worker marked stuck
// (docs/reliability.md, "Simulation", "What it found"). An assignment
// change reconciles at once anyway.
func (lp *loop) retryRefused(refused int) {
	if refused <= 0 {
		lp.refusals = 0
		return
	}
	if !lp.retryAt.IsZero() {
		return // one pending retry is enough
	}
	p := lp.w.cfg.Policy
	d := p.EffectiveLockDelay() + 25*time.Millisecond
	if lp.refusals > 0 {
		d = min(d, p.RenewEvery)
	}
	lp.refusals++
	lp.retryAt = time.Now().Add(d)
	lp.retryTimer.Reset(d)
}
