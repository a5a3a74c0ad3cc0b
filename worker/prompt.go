package worker

import (
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Prompt moves. Rebalance rounds are spaced RoundEvery apart (±50 %), which
// keeps a large fleet's hand-offs from arriving together; but waiting a
// whole round is slow exactly when something must move: a member joined, or
// a freed shard was refused because its old owner's lock-delay had not run
// out. The three helpers below act on those moments, without giving up the
// jitter or the quiet start-up.

// liveMembers is the set of live member sessions of a snapshot.
func liveMembers(s *shard.Snapshot) map[shard.SessionID]bool {
	out := map[shard.SessionID]bool{}
	if s == nil {
		return out
	}
	for _, m := range s.Members {
		if m.Live() {
			out[m.Session] = true
		}
	}
	return out
}

// membersChanged reports whether the live members differ between two
// snapshots (a join, a leave, a rejoin under a new session).
func membersChanged(prev, next *shard.Snapshot) bool {
	a, b := liveMembers(prev), liveMembers(next)
	if len(a) != len(b) {
		return true
	}
	for s := range b {
		if !a[s] {
			return true
		}
	}
	return false
}

// established reports whether every shard of the fleet is held by a live
// member in s. A worker joining such a fleet need not wait for its first
// round to go warm: there is nothing free for it to grab, and every shard
// freed from now on is freed for a designated acquirer (the reason for the
// quiet start-up is a fleet starting together, where the first worker up
// would see every shard free and designated to itself).
func established(s *shard.Snapshot, shards []shard.ID) bool {
	live := liveMembers(s)
	for _, id := range shards {
		st, ok := s.Shard(id)
		if !ok || !st.Held() || !live[st.Session] {
			return false
		}
	}
	return true
}

// roundSoon brings the next rebalance round forward after a change of
// members, to a jittered moment within a quarter of RoundEvery, but never
// closer than a quarter of RoundEvery to the previous round: a join is
// then absorbed in about RoundEvery/4 instead of up to 1.5 × RoundEvery,
// and a burst of joins (a fleet starting) still gets at most four rounds
// per RoundEvery.
func (lp *loop) roundSoon(now time.Time) {
	q := lp.w.cfg.RoundEvery / 4
	at := now.Add(lp.w.jitter.between(0, q))
	if earliest := lp.lastRound.Add(q); at.Before(earliest) {
		at = earliest
	}
	if at.Before(lp.nextRound) {
		lp.setRound(at.Sub(now), now)
	}
}

// setRound arms the round timer to fire in d.
func (lp *loop) setRound(d time.Duration, now time.Time) {
	lp.nextRound = now.Add(d)
	lp.roundTimer.Reset(d)
}

// retryRefused arms a re-plan for when the lock-delay of a refused shard
// should be over. A shard that was free in the snapshot and that Acquire
// did not grant was, nearly always, still in its previous owner's
// lock-delay (Consul counts it from the invalidation, which the watch
// showed this worker moments ago); without a retry it would wait for the
// next round or watch event. The first retry comes LockDelay (at least a
// tenth of RoundEvery) after the refusal; repeated refusals double it up
// to RoundEvery, from where rounds retry anyway.
func (lp *loop) retryRefused(want []shard.Acquisition, started []shard.ID, v view, now time.Time) {
	granted := make(map[shard.ID]bool, len(started))
	for _, id := range started {
		granted[id] = true
	}
	refused := false
	for _, a := range want {
		if st := v.byShard[a.Shard]; !granted[a.Shard] && !st.Held() {
			refused = true
			break
		}
	}
	if !refused {
		lp.refusals = 0
		return
	}
	if !lp.retryAt.IsZero() {
		return // one pending retry is enough
	}
	d := max(lp.w.cfg.Policy.EffectiveLockDelay(), lp.w.cfg.RoundEvery/10)
	for range min(lp.refusals, 8) {
		d *= 2
	}
	d = min(d, lp.w.cfg.RoundEvery) + 25*time.Millisecond
	lp.refusals++
	lp.retryAt = now.Add(d)
	lp.retryTimer.Reset(d)
}
