package worker

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// campaign runs on its own goroutine until term ends (the lease's end, or
// the worker's shutdown, which then resigns). Every worker is a
// candidate for P/assignor, held with the term's own session, so the
// assignor dies with its worker and a worker never holds a second session.
// While this worker holds the lock it is the fleet's assignor (lead); when
// it does not, it waits on the one key, and tries again when the key is
// freed, or when a lock-delay may have ended (which wakes no watcher).
func (w *Worker) campaign(term context.Context, l *lease) {
	retry := backoff{base: 100 * time.Millisecond, max: 5 * time.Second, j: w.jitter}
	var index uint64
	try := true
	othersHold := false // the key as last read is held by another session
	for term.Err() == nil {
		if try {
			ctx, cancel := context.WithTimeout(term, w.cfg.Policy.RenewEvery)
			epoch, held, err := w.cfg.Coordinator.Campaign(ctx, l.session, w.cfg.ID)
			cancel()
			switch {
			case term.Err() != nil:
				return
			case errors.Is(err, shard.ErrSessionInvalid):
				return // the term is over; the renewal or the member watch ends it
			case err != nil:
				w.log.Warn("campaigning for the assignor failed; retrying", zap.Error(err))
				if !sleepCtx(term.Done(), retry.next()) {
					return
				}
				continue
			case held:
				retry.reset()
				w.lead(term, l, epoch)
				index, try, othersHold = 0, true, false
				continue
			}
			try = false
		}
		// Wait for the key to change. While another session holds it, that
		// is all: its holder's end clears the key's session, which is a
		// write and wakes the watch. Once it is free but the lock refused
		// this candidate, the wait is bounded by a lock-delay (plus jitter,
		// so candidates do not all try at once): the lock stays closed for
		// the lock-delay, and its end is not a write. (Bounding every wait
		// made each candidate read the key and its session every lock-delay:
		// 0.2 requests/s per worker on the default policy, a fifth of the
		// fleet's steady load.)
		ctx, cancel := term, context.CancelFunc(func() {})
		if !othersHold {
			ld := w.cfg.Policy.EffectiveLockDelay()
			ctx, cancel = context.WithTimeout(term, ld+w.jitter.between(25*time.Millisecond, 25*time.Millisecond+ld/4))
		}
		k, err := w.cfg.Coordinator.WatchAssignor(ctx, index)
		timedOut := ctx.Err() != nil
		cancel()
		switch {
		case term.Err() != nil:
			return
		case timedOut:
			try = true
		case err != nil:
			if !sleepCtx(term.Done(), retry.next()) {
				return
			}
			index, try, othersHold = 0, true, false
		default:
			retry.reset()
			changed := index == 0 || k.Index != index
			index = shard.NextIndex(index, k.Index)
			othersHold = k.Held()
			try = changed && !othersHold
		}
	}
}

// lead is the assignor's loop, for as long as this worker holds P/assignor
// at epoch. Each turn lists the fleet (the only listing in the fleet: other
// workers read their own keys), decides with rebalance.Step, and writes the
// keys that change in transactions the coordinator refuses unless this
// session still holds P/assignor at epoch, so a paused or deposed assignor
// cannot write. It keeps nothing between turns that is not in the
// coordinator: a new assignor carries on from the listing alone. It returns
// when the term ends or the lock is lost.
func (w *Worker) lead(term context.Context, l *lease, epoch shard.Token) {
	log := w.log.With(zap.Uint64("epoch", uint64(epoch)), zap.String("session", string(l.session)))
	log.Info("became the fleet's assignor")
	w.m.assignor.Set(1)
	w.m.assignorEpoch.Set(float64(epoch))
	defer w.m.assignor.Set(0)
	w.leading.Store(uint64(epoch))
	defer w.leading.Store(0)

	retry := backoff{base: 50 * time.Millisecond, max: 2 * time.Second, j: w.jitter}
	var index uint64
	var wake time.Time
	var last *shard.Snapshot
	var problems seenProblems // logged once while they stay
	gather := gathering{limit: w.cfg.ColdStartGather}
	defer w.m.problems.Set(0)
	defer w.m.ops.reset()
	for term.Err() == nil {
		ctx, cancel := term, context.CancelFunc(func() {})
		if !wake.IsZero() {
			ctx, cancel = context.WithDeadline(term, wake)
		}
		snap, err := w.cfg.Coordinator.Watch(ctx, index)
		woke := ctx.Err() != nil && term.Err() == nil
		cancel()
		switch {
		case term.Err() != nil:
			return
		case woke && last != nil:
			snap = *last // nothing changed, but time did: step again
		case err != nil:
			log.Warn("listing the fleet failed; retrying", zap.Error(err))
			if !sleepCtx(term.Done(), retry.next()) {
				return
			}
			index = 0
			continue
		case index != 0 && snap.Index == index:
			continue // a blocking query that timed out
		}
		retry.reset()
		index = shard.NextIndex(index, snap.Index)
		last = &snap
		w.m.problems.Set(float64(len(snap.Problems)))
		w.m.ops.observe(snap, time.Now())
		for _, p := range problems.fresh(snap.Problems) {
			log.Warn("the coordinator reports a problem under the fleet prefix (ignored, never taken as an owner, an assignment or a config)", zap.String("problem", p))
		}
		if snap.Assignor.Session != l.session || snap.Assignor.Epoch != epoch {
			log.Info("no longer the fleet's assignor", zap.String("holder", snap.Assignor.Worker),
				zap.Uint64("holder_epoch", uint64(snap.Assignor.Epoch)))
			return
		}
		next, err := w.assign(term, l, epoch, snap, &gather, log)
		if errors.Is(err, shard.ErrNotAssignor) {
			log.Info("deposed: the coordinator refused this assignor's writes", zap.Error(err))
			return
		}
		if err != nil && term.Err() != nil {
			return // the term ended (a stop, a lost lease) during the write: nothing failed
		}
		if err != nil {
			log.Warn("writing assignments failed; listing again", zap.Error(err))
			index = 0
			if !sleepCtx(term.Done(), retry.next()) {
				return
			}
			continue
		}
		wake = next
		if !sleepCtx(term.Done(), w.cfg.WatchCoalesce) {
			return
		}
	}
}

// assign runs one Step on snap and writes its decision. It returns when to
// step again if nothing changes.
func (w *Worker) assign(term context.Context, l *lease, epoch shard.Token, snap shard.Snapshot, gather *gathering, log *zap.Logger) (time.Time, error) {
	began := time.Now()
	state := stepState(snap, w.shards, began)
	state.Loads = w.stepLoads(snap)
	if until := gather.wait(state); !until.IsZero() {
		return until, nil // a cold fleet whose members are still joining
	}
	d, err := rebalance.Step(state, rebalance.Policy{MaxMovesInFlight: w.cfg.MaxMovesInFlight, StuckAfter: w.cfg.EffectiveStuckAfter(), Load: w.cfg.loadPolicy()})
	w.m.assignorSteps.Inc()
	w.m.assignorStepSeconds.Observe(time.Since(began).Seconds())
	if err != nil {
		log.Error("cannot decide from this listing; waiting for the next", zap.Uint64("index", snap.Index), zap.Error(err))
		return time.Time{}, nil
	}
	w.m.imbalance.Set(float64(rebalance.Spread(heldCounts(state))))
	if len(d.Assign) == 0 && len(d.Delete) == 0 {
		return d.Wake, nil
	}
	set := make(map[string]*shard.Assignment, len(d.Assign)+len(d.Delete))
	for id, a := range d.Assign {
		m, _ := snap.Member(id)
		set[id] = &shard.Assignment{Since: a.Since, Shards: a.Shards, Free: a.Free, AsOf: snap.Index, Why: whyFree(snap, a.Free), Draining: m.Draining,
			Waiting: a.Waiting, WaitingSince: a.WaitingSince, Stuck: a.Stuck, StuckSession: a.StuckSession,
			ByLoad: d.ByLoad, Arrived: a.Arrived, OutOfBand: a.OutOfBand}
	}
	for _, id := range d.Delete {
		set[id] = nil
	}
	ctx, cancel := context.WithTimeout(term, w.cfg.Policy.StepDownAfter())
	defer cancel()
	if err := w.cfg.Coordinator.Assign(ctx, l.session, epoch, set); err != nil {
		return time.Time{}, err
	}
	w.m.assignmentsWritten.Add(float64(len(set)))
	for _, mv := range d.Moves {
		w.m.movesByReason.WithLabelValues(mv.Reason.String()).Inc()
		if mv.From != "" {
			log.Info("hand-off", zap.String("shard", string(mv.Shard)), zap.String("from", mv.From), zap.String("to", mv.To),
				zap.String("reason", mv.Reason.String()))
		}
	}
	return d.Wake, nil
}

// stepState is the assignor's input from one listing. Holders are derived
// by session, never by the name in a lock's value: a lock still held by a
// member's previous session is not the member's. shards must be sorted, as
// a Config's IDs are.
func stepState(snap shard.Snapshot, shards []shard.ID, now time.Time) rebalance.State {
	st := rebalance.State{Now: now, Shards: shards, Holders: make([]string, len(shards)), Assigned: map[string]rebalance.Assignment{},
		Frozen: snap.Freeze != nil}
	bySession := map[shard.SessionID]string{}
	for _, m := range snap.Members {
		if m.Returning(now) && m.RejoinUntil.Sub(now) <= MaxRejoinGrace+time.Minute {
			if st.Returning == nil {
				st.Returning = map[string]time.Time{}
			}
			st.Returning[m.ID] = m.RejoinUntil
		}
		if m.Live() {
			st.Members = append(st.Members, rebalance.Member{ID: m.ID, Weight: m.Weight, Draining: m.Draining, Cordoned: m.Cordon != nil, Session: m.Session})
			bySession[m.Session] = m.ID
		}
	}
	// snap.Shards is sorted by ID too: one merge lines the locks up with
	// shards (a lock of a shard outside them is skipped).
	i := 0
	for _, s := range snap.Shards {
		for i < len(shards) && shards[i] < s.Shard {
			i++
		}
		if i == len(shards) {
			break
		}
		if id, ok := bySession[s.Session]; ok && s.Held() && s.Shard == shards[i] {
			st.Holders[i] = id
		}
	}
	for id, a := range snap.Assignments {
		st.Assigned[id] = rebalance.Assignment{Shards: a.Shards, Since: a.Since, Free: a.Free,
			Waiting: a.Waiting, WaitingSince: a.WaitingSince, Stuck: a.Stuck, StuckSession: a.StuckSession,
			Arrived: a.Arrived, OutOfBand: a.OutOfBand}
	}
	return st
}

// whyFree says why each of the free shards is free, from its lock's value
// in snap, for the worker to record when it takes it.
func whyFree(snap shard.Snapshot, free []shard.ID) map[shard.ID]shard.MoveReason {
	if len(free) == 0 {
		return nil
	}
	why := make(map[shard.ID]shard.MoveReason, len(free))
	for _, id := range free {
		st, _ := snap.Shard(id)
		switch {
		case st.Token == 0:
			why[id] = shard.MoveReason{Kind: shard.MoveInitial}
		case st.Owner.Released == shard.ReleasedForLoad:
			why[id] = shard.MoveReason{Kind: shard.MoveLoad, From: st.Owner.Worker}
		case st.Owner.Released != "":
			why[id] = shard.MoveReason{Kind: shard.MoveRebalanced, From: st.Owner.Worker, Note: st.Owner.Released}
		default:
			why[id] = shard.MoveReason{Kind: shard.MoveOrphaned, From: st.Owner.Worker}
		}
	}
	return why
}

// heldCounts is the number of shards each live member holds.
func heldCounts(s rebalance.State) map[string]int {
	c := make(map[string]int, len(s.Members))
	for _, m := range s.Members {
		c[m.ID] = 0
	}
	for _, id := range s.Holders {
		if id != "" {
			c[id]++
		}
	}
	return c
}
