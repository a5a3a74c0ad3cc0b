package rebalance

import (
	"cmp"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// A warm move is a planned hand-off to a member that runs standbys
// (Member.Standby). It has three stages, all in the keys:
//
//  1. preparing: the shard stays in its holder's key and is listed in
//     the target's Standby, with the time the preparation started in the
//     target's Preparing. It counts under MaxMovesInFlight like a
//     hand-off. Each step plans the move again; while it is still
//     planned, it keeps preparing on the member that prepares it (its
//     warm target, warmTargets) even if the plan now names another, and a
//     move no longer planned (the fleet changed) ends its preparation.
//  2. handing off: once the target reports its standby ready
//     (Member.Standbys), or PrepareTimeout after the start (then
//     Decision.Cold says so), the shard leaves its holder's key as in any
//     hand-off. The target's Standby keeps listing it.
//  3. placed: the released shard counts for its warm target as a shard
//     assigned to it does (plan), so it is given to it while it has room;
//     its Standby lists it until it holds it: its worker ends the standby
//     when it takes the lock (the promotion), and starts the handler warm.
//
// A free shard, one placed because its owner was lost, and a hand-off
// to a member that runs no standbys move at once, cold, as before.
//
// Load moves are planned only while nothing is in flight, and the first
// of them handed off would stop the planning of the others. So in a fleet
// with standbys they are started only in a step that starts no other
// move, and they wait for each other: none is handed off until every one
// is ready (or timed out), and then all are, in one step.

// warmTargets sets st.warmTo when some key lists standbys: for each
// shard, the first member whose key lists it as a standby and that may be
// given it now (it runs standbys, is neither stuck, cordoned nor
// draining, does not hold it, and the rules allow it), or -1.
func (st *step) warmTargets() {
	if !slices.ContainsFunc(st.standby, func(l []int32) bool { return len(l) > 0 }) {
		return
	}
	st.warmTo = st.sc.int32s(len(st.shards))
	for i := range st.warmTo {
		st.warmTo[i] = -1
	}
	for m, list := range st.standby {
		if !st.members[m].Standby || st.stuck[m] || st.cordoned[m] || st.draining[m] {
			continue
		}
		for _, i := range list {
			if st.warmTo[i] < 0 && st.holder[i] != int32(m) && st.rules.allows(int(i), int32(m)) {
				st.warmTo[i] = int32(m)
			}
		}
	}
}

// warmTarget is shard i's warm target, or -1.
func (st *step) warmTarget(i int) int32 {
	if st.warmTo == nil {
		return -1
	}
	return st.warmTo[i]
}

// prepare decides whether hand-off i, which decide is starting, must
// wait for a standby: its warm target, or else its target, runs
// standbys, that standby has not reported ready, and it has been
// preparing for less than PrepareTimeout. A hand-off whose preparation
// timed out is recorded as cold.
func (st *step) prepare(i int32) bool {
	t := st.target[i]
	if w := st.warmTarget(int(i)); w >= 0 {
		t = w
	}
	if t < 0 || !st.members[t].Standby {
		return false
	}
	id := st.shards[i]
	if st.members[t].Standbys[id].Ready {
		return false
	}
	if since, ok := st.preparingSince(int(i), t); ok && !st.now.Before(since.Add(st.p.PrepareTimeout)) {
		st.cold = append(st.cold, warmMove{i, t})
		return false
	}
	st.flags[i] |= preparing
	st.prepared = append(st.prepared, warmMove{i, t})
	return true
}

// warmFleet reports whether some member runs standbys.
func (st *step) warmFleet() bool {
	return slices.ContainsFunc(st.members, func(m Member) bool { return m.Standby })
}

// holdLoadMoves keeps every load move among started preparing while one
// of them is (see above): those whose standby is ready, or timed out,
// wait for the rest.
func (st *step) holdLoadMoves(started []int32) {
	if !slices.ContainsFunc(st.prepared, func(mv warmMove) bool { return st.flags[mv.i]&loadMoved != 0 }) {
		return
	}
	for _, i := range started {
		if st.flags[i]&(loadMoved|handedOff) != loadMoved|handedOff {
			continue
		}
		t := st.target[i]
		if w := st.warmTarget(int(i)); w >= 0 {
			t = w
		}
		st.next[i] = st.holder[i]
		st.flags[i] &^= handedOff
		st.handoffs--
		st.cold = slices.DeleteFunc(st.cold, func(mv warmMove) bool { return mv.i == i })
		if t >= 0 && st.members[t].Standby { // a target without standbys just waits
			st.flags[i] |= preparing
			st.prepared = append(st.prepared, warmMove{i, t})
		}
	}
}

// warmMove is a shard and the member a warm move takes it to.
type warmMove struct{ i, to int32 }

// preparingSince is when shard i's preparation on member t started, as
// t's key says, if it lists the shard as a standby still preparing.
func (st *step) preparingSince(i int, t int32) (time.Time, bool) {
	if _, listed := slices.BinarySearch(st.standby[t], int32(i)); !listed {
		return time.Time{}, false
	}
	since, ok := st.keys[t].Preparing[st.shards[i]]
	return since, ok && !since.After(st.now)
}

// warmKeys returns, per member, the Standby and Preparing of its key
// after this step (nil for a member with neither): the shards preparing
// for it, and those of its key's Standby that are on their way to it (in
// flight towards it, or in its key and not yet held by it).
func (st *step) warmKeys() ([][]shard.ID, []map[shard.ID]time.Time) {
	if len(st.prepared) == 0 && st.warmTo == nil {
		return nil, nil
	}
	w := len(st.members)
	lists := make([][]int32, w)
	preps := make([]map[shard.ID]time.Time, w)
	for _, mv := range st.prepared {
		lists[mv.to] = append(lists[mv.to], mv.i)
		since, ok := st.preparingSince(int(mv.i), mv.to)
		if !ok {
			since = st.now
		}
		if preps[mv.to] == nil {
			preps[mv.to] = map[shard.ID]time.Time{}
		}
		preps[mv.to][st.shards[mv.i]] = since
	}
	for t, list := range st.standby {
		for _, i := range list {
			if st.flags[i]&preparing == 0 && st.onItsWay(int(i), int32(t)) {
				lists[t] = append(lists[t], i)
			}
		}
	}
	out := make([][]shard.ID, w)
	for t, list := range lists {
		slices.Sort(list)
		for _, i := range slices.Compact(list) {
			out[t] = append(out[t], st.shards[i])
		}
	}
	return out, preps
}

// onItsWay reports whether shard i, listed as member t's standby, is
// still coming to t: t does not hold it yet, and its key lists it after
// this step, or it is in flight (its holder's key no longer lists it)
// and t is its warm target.
func (st *step) onItsWay(i int, t int32) bool {
	if !st.members[t].Standby || st.holder[i] == t {
		return false
	}
	if st.next[i] == t {
		return true
	}
	return st.next[i] < 0 && st.holder[i] >= 0 && st.warmTarget(i) == t
}

// sameWarm reports whether a key's Standby and Preparing are those given.
func sameWarm(key Assignment, list []shard.ID, prep map[shard.ID]time.Time) bool {
	if !slices.Equal(key.Standby, list) || len(key.Preparing) != len(prep) {
		return false
	}
	for id, at := range prep {
		if old, ok := key.Preparing[id]; !ok || !old.Equal(at) {
			return false
		}
	}
	return true
}

// warmTransfers are the moves of list, for the decision, sorted by shard.
func (st *step) warmTransfers(list []warmMove) []Transfer {
	var out []Transfer
	for _, mv := range list {
		h := st.holder[mv.i]
		why := st.reasonOf(h)
		if st.flags[mv.i]&loadMoved != 0 {
			why = shard.ReasonLoad
		}
		out = append(out, Transfer{Shard: st.shards[mv.i], From: st.ids[h], To: st.ids[mv.to], Reason: why})
	}
	slices.SortFunc(out, func(a, b Transfer) int { return cmp.Compare(a.Shard, b.Shard) })
	return out
}

// prepareWake is when the earliest preparation of this step times out
// (zero when none prepares).
func (st *step) prepareWake(preps []map[shard.ID]time.Time) time.Time {
	var wake time.Time
	for _, prep := range preps {
		for _, since := range prep {
			if at := since.Add(st.p.PrepareTimeout); wake.IsZero() || at.Before(wake) {
				wake = at
			}
		}
	}
	return wake
}
