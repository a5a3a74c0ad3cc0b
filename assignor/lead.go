package assignor

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// lead is the assignor's loop, for as long as session id holds the role
// at epoch. Each turn lists the fleet (the only listing in the fleet:
// workers read their own keys), decides with rebalance.Step and writes
// the keys that change in transactions the coordinator refuses unless the
// session still holds the role at epoch, so a paused or deposed assignor
// cannot write. Between turns it keeps in memory only pacing (the
// cold-start gathering, how long recent writes took, the last load figures
// seen, the ownership history it records into P/history); what the step must
// remember is in the coordinator, beside each worker's key, so a new
// assignor carries on from the listing alone. It returns when ctx ends or
// the role is lost.
func (a *Assignor) lead(ctx context.Context, id shard.SessionID, epoch shard.Token) {
	log := a.log.With(zap.Uint64("epoch", uint64(epoch)), zap.String("session", string(id)))
	log.Info("became the fleet's assignor")
	a.m.leading.Set(1)
	a.m.epoch.Set(float64(epoch))
	a.leading.Store(uint64(epoch))
	a.shards = a.cfg.Fleet.IDs()
	defer func() {
		a.shards = nil
		a.leading.Store(0)
		a.m.left()
	}()

	var problems seenProblems // logged once while they stay
	var rec recording         // the ownership history, P/history
	gather := gathering{}
	var lag writeLag                   // how long recent writes took, for the stuck verdict
	var following *shard.BalancePolicy // the policy last followed, for the log
	opts := shard.FollowOptions{MinSpacing: a.cfg.Coalesce, Jitter: a.cfg.Jitter, OnError: func(err error) bool {
		log.Warn("listing the fleet failed; retrying", zap.Error(err))
		return true
	}}
	_ = shard.Follow(ctx, a.cfg.Coordinator.Fleet().Watch, opts, func(snap shard.Snapshot) (time.Time, error) {
		a.m.observe(snap, time.Now())
		for _, p := range problems.fresh(snap.Problems) {
			log.Warn("the coordinator reports a problem under the fleet prefix (ignored, never taken as an owner, an assignment or a config)", zap.String("problem", p))
		}
		if snap.Assignor.Session != id || snap.Assignor.Token != epoch {
			log.Info("no longer the fleet's assignor", zap.String("holder", snap.Assignor.Worker),
				zap.Uint64("holder_epoch", uint64(snap.Assignor.Token)))
			return time.Time{}, shard.ErrStopFollowing
		}
		p := Following(snap, a.cfg.Policy)
		if following == nil || !following.Equal(p) {
			log.Info("following the fleet's balance policy", zap.Stringer("policy", p), zap.Bool("stored", snap.Policy != nil))
			following = &p
		}
		wake, err := a.step(ctx, id, epoch, snap, p, &gather, &lag, log)
		switch {
		case errors.Is(err, shard.ErrNotAssignor):
			log.Info("deposed: the coordinator refused this assignor's writes", zap.Error(err))
			return time.Time{}, shard.ErrStopFollowing
		case err != nil && ctx.Err() != nil:
			return time.Time{}, shard.ErrStopFollowing // the term ended (a stop, a lost lease) during the write: nothing failed
		case err != nil:
			log.Warn("writing assignments failed; listing again", zap.Error(err))
			return time.Time{}, shard.ErrFollowAgain
		}
		if wake, err = a.record(ctx, id, epoch, snap, &rec, wake, log); err != nil {
			log.Info("deposed: the coordinator refused this assignor's ownership history", zap.Error(err))
			return time.Time{}, shard.ErrStopFollowing
		}
		return wake, nil
	})
}

// step runs one rebalance.Step on snap and writes its decision. It
// returns when to step again if nothing changes.
func (a *Assignor) step(ctx context.Context, id shard.SessionID, epoch shard.Token, snap shard.Snapshot, pol shard.BalancePolicy, gather *gathering, lag *writeLag, log *zap.Logger) (time.Time, error) {
	began := time.Now()
	// A reshard's config writes come first: the next listing places what
	// they open. One that fails is logged and the step goes on, so that a
	// config the assignor cannot write (edited by hand) stops the reshard
	// only, never failover.
	if rp, ok := snap.Reshard(); ok && (len(rp.Openable) > 0 || childrenRunning(snap, rp)) {
		var err error
		if len(rp.Openable) > 0 {
			err = a.openChildren(ctx, *snap.Config, rp.Openable, log)
		} else {
			err = a.endReshard(ctx, *snap.Config, log)
		}
		if err == nil {
			return time.Time{}, nil
		}
		log.Warn("writing the reshard's progress to the fleet's config failed; placing as usual meanwhile", zap.Error(err))
	}
	u := a.universeOf(snap, a.cfg.Fleet, waveOf(pol, snap))
	state, unread := State(snap, u.cfg, u.ids, began)
	changed := u.filter(&state)
	// While a reshard runs, nothing but its children's placement moves:
	// a parent waiting its turn, or a child started, is never handed off
	// (a freeze's rule; drains and rebalancing wait for the end).
	state.Frozen = state.Frozen || u.cfg.Resharding()
	for _, p := range unread {
		log.Warn("cannot read the assignor's memory of a worker", zap.String("problem", p))
	}
	if pol.Load != nil {
		state.Loads = a.loads.of(snap, u.ids)
	} else {
		a.loads.forget() // figures seen before a switch to counts are stale by a switch back
	}
	state.Rules = Rules(snap, pol)
	fresh := func(deadline time.Time) ([]string, error) {
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		snap, err := a.cfg.Coordinator.Fleet().Watch(ctx, 0)
		if err != nil {
			return nil, err
		}
		st, _ := State(snap, u.cfg, u.ids, time.Now())
		return memberIDs(st), nil
	}
	if until := gather.wait(state, gatherLimit(pol), fresh); !until.IsZero() {
		return until, nil // a cold fleet whose members are still joining
	}
	sp := StepPolicy(pol, a.cfg.Lease)
	base := sp.StuckAfter
	sp.StuckAfter = lag.stuckAfter(base, began)
	d, err := rebalance.Step(state, sp)
	a.m.steps.Inc()
	a.m.stepSeconds.Observe(time.Since(began).Seconds())
	if err != nil {
		log.Error("cannot decide from this listing; waiting for the next", zap.Uint64("index", snap.Index), zap.Error(err))
		return time.Time{}, nil
	}
	a.m.imbalance.Set(float64(rebalance.Spread(heldCounts(state))))
	if lo, hi, ok := spread(snap, state.Loads); ok && state.Loads != nil {
		a.m.loadMin.Set(lo)
		a.m.loadMax.Set(hi)
	}
	a.m.unplaceable.Set(float64(len(d.Unplaceable)))
	a.unplaceable.report(d.Unplaceable, log)
	a.m.preparing.Set(float64(len(d.Preparing)))
	d = askLoads(snap, state, d, pol.Load != nil)
	d = askClose(snap, state, d, u, changed)
	if len(d.Assign) == 0 && len(d.Delete) == 0 {
		return d.Wake, nil
	}
	set, err := Keys(snap, u.cfg, d, pol.Load != nil)
	if err != nil {
		log.Error("cannot write this decision; waiting for the next listing", zap.Error(err))
		return time.Time{}, nil
	}
	for _, k := range set {
		if k != nil {
			k.Close = u.closingOf(k.Shards)
		}
	}
	// The write is bounded by the coordinator's own request timeouts (on
	// Consul one RequestTimeout, 10 s by default, for the whole write; on
	// etcd one per transaction, which it paces by its apply), not by the
	// step-down time: at 1,000 workers a cold fleet's keys take 16
	// transactions, and a write cut short is listed and decided again,
	// which costs more than it saves. The transactions compare the role,
	// so a late one of a deposed assignor is refused.
	err = a.cfg.Coordinator.Assignments().Assign(ctx, id, epoch, set)
	lag.wrote(began, time.Now(), base) // a write cut short may have written keys too
	if err != nil {
		return time.Time{}, err
	}
	a.m.written.Add(float64(len(set)))
	for _, mv := range d.Moves {
		a.m.moves.WithLabelValues(mv.Reason.String()).Inc()
		if mv.From != "" {
			log.Info("hand-off", zap.String("shard", string(mv.Shard)), zap.String("from", mv.From), zap.String("to", mv.To),
				zap.String("reason", mv.Reason.String()))
		}
	}
	for _, mv := range d.Cold {
		a.m.cold.Inc()
		log.Warn("moved cold: the target's standby was not ready within the prepare timeout; it starts from the committed offset without warm state",
			zap.String("shard", string(mv.Shard)), zap.String("from", mv.From), zap.String("to", mv.To), zap.Duration("prepare_timeout", prepareTimeout(pol)))
	}
	return d.Wake, nil
}

// waveOf is how many parents of a reshard close at once: the fleet's move
// budget (MaxMovesInFlight, or its default for the fleet's size).
func waveOf(p shard.BalancePolicy, snap shard.Snapshot) int {
	if p.MaxMovesInFlight > 0 {
		return p.MaxMovesInFlight
	}
	live := 0
	for _, m := range snap.Members {
		if m.Live() {
			live++
		}
	}
	n := 0
	if snap.Config != nil {
		n, _ = snap.Config.Current()
	}
	return rebalance.DefaultMaxMovesInFlight(n, max(live, 1))
}

// prepareTimeout is p's prepare timeout, its default filled in.
func prepareTimeout(p shard.BalancePolicy) time.Duration {
	if p.PrepareTimeout == 0 {
		return rebalance.DefaultPrepareTimeout
	}
	return p.PrepareTimeout
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

// seenProblems remembers the foreign or malformed keys last reported, so
// a key that stays under the prefix is logged once, not on every listing
// (a busy fleet lists many times a second). A problem that goes away and
// comes back is reported again.
type seenProblems map[string]bool

// fresh returns the problems not in the previous snapshot's list, and
// remembers this list in their place.
func (s *seenProblems) fresh(problems []string) []string {
	var out []string
	next := make(seenProblems, len(problems))
	for _, p := range problems {
		if !(*s)[p] && !next[p] {
			out = append(out, p)
		}
		next[p] = true
	}
	*s = next
	return out
}
