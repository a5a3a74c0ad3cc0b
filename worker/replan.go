package worker

import (
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// view is the latest snapshot digested for planning.
type view struct {
	plan     rebalance.Plan
	byShard  map[shard.ID]shard.ShardState
	ownerOf  map[shard.SessionID]string // live sessions → member ID
	counts   map[string]int             // shards currently held per live member
	capacity int                        // this worker's quota
}

func (lp *loop) digest() (view, error) {
	s := lp.snap
	if s == lp.digestedFor {
		// A round with no newer snapshot plans from the same view: at 100
		// workers × 10,000 shards one plan is a million rendezvous scores,
		// and every worker rounds every second.
		return lp.digested, nil
	}
	v := view{byShard: make(map[shard.ID]shard.ShardState, len(s.Shards)), ownerOf: map[shard.SessionID]string{}, counts: map[string]int{}}
	var members []rebalance.Member
	for _, m := range s.Members {
		if m.Live() && m.ID == lp.w.cfg.ID && m.Session == lp.lease.session {
			lp.noteDraining(m.Draining)
		}
		if m.Live() {
			members = append(members, rebalance.Member{ID: m.ID, Weight: m.Weight, Draining: m.Draining})
			v.ownerOf[m.Session] = m.ID
			v.counts[m.ID] = 0
		}
	}
	owners := make(map[shard.ID]string, len(s.Shards))
	for _, st := range s.Shards {
		v.byShard[st.Shard] = st
		if !st.Held() {
			continue
		}
		if id, ok := v.ownerOf[st.Session]; ok {
			owners[st.Shard] = id
			v.counts[id]++
		} else {
			// Held by a session with no live member key: not a planner
			// member, so the shard is "free" to the planner, but Acquire
			// will find it held. Name it so it never matches a member.
			owners[st.Shard] = "session:" + string(st.Session)
		}
	}
	plan, err := rebalance.Compute(rebalance.Input{Shards: lp.w.shards, Members: members, Owners: owners})
	if err != nil {
		return v, err
	}
	v.plan = plan
	v.capacity = plan.Capacity[lp.w.cfg.ID]
	lp.digested, lp.digestedFor = v, s
	return v, nil
}

// replan acts on the latest snapshot: it notices lost shards, acquires the
// free shards designated to this worker (and orphans past their grace), and,
// in a rebalance round, hands off up to MaxMovesPerRound shards.
func (lp *loop) replan(round bool) {
	if lp.snap == nil {
		return
	}
	v, err := lp.digest()
	if err != nil {
		lp.w.log.Error("cannot plan from this snapshot; waiting for the next", zap.Uint64("index", lp.snap.Index), zap.Error(err))
		return
	}
	lp.w.m.imbalance.Set(float64(rebalance.Spread(v.counts)))
	me, session := lp.w.cfg.ID, lp.lease.session
	now := time.Now()

	// Lost: a shard whose runner believes it owns it, in a snapshot that
	// already reflects the claim (index ≥ token), held by someone else.
	for id, r := range lp.runners {
		if r.state != ShardOwned && r.state != ShardRevoking {
			continue
		}
		if st := v.byShard[id]; lp.snap.Index >= uint64(r.claim.Token) && st.Session != session {
			who := "nobody (released by an operator, or this worker's session ended)"
			if st.Held() {
				who = fmt.Sprintf("session %s of %q", st.Session, v.ownerOf[st.Session])
			}
			lp.lose(r, "the shard is now held by "+who)
		}
	}

	var want []shard.Acquisition
	var overdue []shard.ID             // free past their orphan grace, designated to someone else
	takeovers := map[shard.ID]string{} // orphans wanted from a designated acquirer that did not take them
	var strays []shard.ID              // held by this session without a runner, targeted elsewhere
	for _, id := range lp.w.shards {
		st, target := v.byShard[id], v.plan.Target[id]
		if _, busy := lp.runners[id]; busy {
			continue
		}
		switch {
		case st.Session == session && target == me:
			want = append(want, shard.Acquisition{Shard: id, Reason: "adopted: held by this session"})
		case st.Session == session:
			strays = append(strays, id)
		case st.Held():
			delete(lp.takeAfter, id)
		case target == me:
			delete(lp.takeAfter, id)
			want = append(want, shard.Acquisition{Shard: id, Reason: acquireReason(st, "")})
		default:
			o, seen := lp.takeAfter[id]
			if !seen || o.token != st.Token {
				lp.takeAfter[id] = orphan{token: st.Token, after: now.Add(lp.w.jitter.between(lp.w.cfg.OrphanGrace, 2*lp.w.cfg.OrphanGrace+1))}
			} else if now.After(o.after) {
				overdue = append(overdue, id)
			}
		}
	}
	// Orphan takeovers are budgeted per plan, counting what this plan
	// already asks for: at most one shard above this worker's quota, plus
	// MaxMovesPerRound of a stuck acquirer's. Without the budget, a worker
	// that waited out the grace asked for every overdue shard at once — in a
	// 4096-shard cold start, where designated acquirers are merely slow,
	// that was a stampede that kept counts hundreds apart.
	room := v.capacity + 1 - lp.owned() - len(want)
	stuckRoom := lp.w.cfg.MaxMovesPerRound
	for _, id := range overdue {
		target := v.plan.Target[id]
		switch {
		case room > 0:
			room--
		case stuckRoom > 0 && lp.isStuck(target, now):
			stuckRoom--
		default:
			continue
		}
		want = append(want, shard.Acquisition{Shard: id, Reason: acquireReason(v.byShard[id], target)})
		takeovers[id] = target
	}
	lp.release(strays, "rebalance")
	if lp.warm {
		started := lp.acquire(want)
		for _, id := range started {
			if target, ok := takeovers[id]; ok {
				lp.markStuck(target, now)
			}
		}
		lp.retryRefused(want, started, v, now)
	}

	if round {
		lp.rebalance(v, now)
	}
	lp.publish()
}

// noteDraining records an operator's drain request (or its withdrawal) seen
// on this worker's own member key. The planner already gives a draining
// member no capacity; remembering it keeps the request across a rejoin.
func (lp *loop) noteDraining(on bool) {
	if lp.w.draining.Swap(on) == on {
		return
	}
	if on {
		lp.w.log.Info("an operator asked this worker to drain: handing off every shard", zap.String("session", string(lp.lease.session)))
	} else {
		lp.w.log.Info("drain withdrawn: taking a share of shards again", zap.String("session", string(lp.lease.session)))
	}
}

// acquireReason explains an acquisition from the shard key's last value.
// A non-empty idleTarget marks a takeover of a shard whose designated
// acquirer did not take it within the orphan grace.
func acquireReason(st shard.ShardState, idleTarget string) string {
	var why string
	switch {
	case st.Token == 0:
		why = "initial: never owned"
	case st.Owner.Released != "":
		why = fmt.Sprintf("rebalanced from %s (%s)", st.Owner.Worker, st.Owner.Released)
	default:
		why = fmt.Sprintf("orphaned: %s's session invalidated", st.Owner.Worker)
	}
	if idleTarget != "" {
		why = fmt.Sprintf("takeover (designated %s did not acquire within the grace period); %s", idleTarget, why)
	}
	return why
}

// reasonClass is the metric label for an acquisition reason.
func reasonClass(why string) string {
	for _, c := range []string{"takeover", "initial", "rebalanced", "orphaned", "adopted"} {
		if len(why) >= len(c) && why[:len(c)] == c {
			return c
		}
	}
	return "other"
}

// acquire locks the wanted shards it can and starts their runners; it
// returns the shards it started.
func (lp *loop) acquire(want []shard.Acquisition) []shard.ID {
	if len(want) == 0 {
		return nil
	}
	ctx, cancel := lp.opCtx()
	defer cancel()
	got, err := lp.w.cfg.Coordinator.Acquire(ctx, lp.lease.session, want)
	if err != nil {
		// The claims granted before the failure are locked by this session:
		// run them now rather than leave them idle until the next look.
		lp.w.log.Warn("acquire failed; running what it granted, retrying the rest next round",
			zap.Int("shards", len(want)), zap.Int("granted", len(got)), zap.Error(err))
	}
	var started []shard.ID
	why := make(map[shard.ID]string, len(want))
	for _, a := range want {
		why[a.Shard] = a.Reason
	}
	for _, c := range got {
		if _, busy := lp.runners[c.Shard]; busy {
			continue
		}
		lp.w.m.acquisitions.WithLabelValues(reasonClass(why[c.Shard])).Inc()
		lp.w.log.Info("acquired shard", zap.String("shard", string(c.Shard)), zap.Uint64("token", uint64(c.Token)),
			zap.String("session", string(lp.lease.session)), zap.String("reason", why[c.Shard]))
		lp.start(c)
		started = append(started, c.Shard)
	}
	return started
}

// takeoverHold, in orphan graces, is how long a worker treats a designated
// acquirer it took a shard over from as stuck (see stuck). Handing shards to
// a stuck acquirer at once would leave each free for another grace every
// round; never handing it any would keep one that recovered under the same
// session from its share for ever.
const takeoverHold = 10

// markStuck records that this worker took a shard over from member id.
func (lp *loop) markStuck(id string, now time.Time) {
	if m, ok := lp.snap.Member(id); ok && m.Live() {
		lp.stuck[id] = stuck{session: m.Session, until: now.Add(takeoverHold * lp.w.cfg.OrphanGrace)}
	}
}

// isStuck reports whether member id is marked stuck, under the session it
// still has in the latest snapshot: a member that rejoined is not.
func (lp *loop) isStuck(id string, now time.Time) bool {
	s, ok := lp.stuck[id]
	if !ok {
		return false
	}
	if m, live := lp.snap.Member(id); !live || m.Session != s.session || !now.Before(s.until) {
		delete(lp.stuck, id)
		return false
	}
	return true
}

func (lp *loop) owned() int {
	n := 0
	for _, r := range lp.runners {
		if r.state == ShardOwned {
			n++
		}
	}
	return n
}

// rebalance hands off owned shards targeted elsewhere in small steps, so a
// join or leave ripples through the fleet in jittered rounds. A round hands
// off at most max(MaxMovesPerRound, ⌈excess/2⌉) shards, counting hand-offs
// still in flight: a worker that grabbed everything while it was alone
// sheds its surplus geometrically (117 extra shards take 7 rounds, not 30),
// while a converged fleet absorbing a join moves one shard per worker.
// Each released shard has exactly one designated acquirer, so a large round
// creates no herd. Nothing is handed to a member this worker marked stuck,
// except when draining.
func (lp *loop) rebalance(v view, now time.Time) {
	inFlight := 0
	for _, r := range lp.runners {
		if r.state == ShardRevoking {
			inFlight++
		}
	}
	why := "rebalance"
	if lp.state == StateDraining || lp.w.draining.Load() {
		why = "drain"
	}
	var out []shard.ID
	for id, r := range lp.runners {
		target := v.plan.Target[id]
		if r.state == ShardOwned && target != lp.w.cfg.ID && (why == "drain" || !lp.isStuck(target, now)) {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	limit := max(lp.w.cfg.MaxMovesPerRound, (len(out)+inFlight+1)/2)
	for _, id := range out {
		if inFlight >= limit {
			break
		}
		lp.revoke(lp.runners[id], why)
		lp.w.m.moves.Inc()
		inFlight++
	}
}
