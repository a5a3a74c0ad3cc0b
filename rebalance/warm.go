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
//     hand-off. Once started it goes on, whatever later plans say, while
//     its holder keeps the shard and its target may be given it (the
//     target is live, runs standbys, is neither stuck, cordoned nor
//     draining, and the rules allow it): a plan that changes with every
//     load figure cannot make it start again elsewhere.
//  2. handing off: once the target reports its standby ready
//     (Member.Standbys), or PrepareTimeout after the start (then
//     Decision.Cold says so), the shard leaves its holder's key as in any
//     hand-off. The target's key keeps listing it, with its start.
//  3. placed: the released shard counts for its target as a shard
//     assigned to it does (plan), so it is given to it while it has room;
//     the key lists it as a standby until the target holds it: its worker
//     ends the standby when it takes the lock (the promotion), and starts
//     the handler warm.
//
// A free shard no key lists, one placed because its owner was lost and a
// hand-off to a member that runs no standbys move at once, cold, as
// before, except that a lost owner's shard counts for its most advanced
// standby:
// with Policy.Standbys, each owned shard has up to that many standbys on
// other members (other zones first), kept where they are while they may
// be, so a lost owner's shard goes to a warm standby.
//
// Load moves are planned only while nothing is in flight. So in a fleet
// with standbys they are planned only while no warm move is under way or
// in flight, and started only in a step that starts no other move.

// warmTargets sets st.listers, st.prepTo and st.warmTo when some key lists
// standbys. A shard's warm target is the member that prepares a warm move
// of it (its key lists the shard with a start in Preparing) if that member
// may be given it, else the most advanced of the members whose key lists
// it as a standby and that may be given it: ready first, then the highest
// Applied, then the first by ID.
func (st *step) warmTargets() {
	if !slices.ContainsFunc(st.standby, func(l []int32) bool { return len(l) > 0 }) {
		return
	}
	n := len(st.shards)
	st.prepTo, st.warmTo = st.sc.int32s(n), st.sc.int32s(n)
	for i := range n {
		st.prepTo[i], st.warmTo[i] = -1, -1
	}
	// listers, as one counting sort: the members whose key lists each
	// shard as a standby.
	start := make([]int32, n+1)
	for _, list := range st.standby {
		for _, i := range list {
			start[i+1]++
		}
	}
	for i := range n {
		start[i+1] += start[i]
	}
	at := slices.Clone(start[:n])
	flat := make([]int32, start[n])
	for m, list := range st.standby {
		for _, i := range list {
			flat[at[i]] = int32(m)
			at[i]++
		}
	}
	st.listers = func(i int) []int32 { return flat[start[i]:start[i+1]] }
	for i := range n {
		best := int32(-1)
		for _, m := range st.listers(i) {
			if !st.mayStandby(i, m) {
				continue
			}
			if len(st.keys[m].Preparing) > 0 {
				if _, ok := st.keys[m].Preparing[st.shards[i]]; ok {
					st.prepTo[i] = m
				}
			}
			// The most advanced matters only for a shard nobody holds
			// (a lost owner's): at rest, with standbys for failover,
			// that is almost none, and comparing reports costs lookups.
			if best < 0 || (st.holder[i] < 0 && st.better(i, m, best)) {
				best = m
			}
		}
		st.warmTo[i] = best
		if st.prepTo[i] >= 0 {
			st.warmTo[i] = st.prepTo[i]
		}
	}
}

// keepRank is what shedding shard i from the member it counts for costs,
// for keep, lowest kept first:
//
//   - 0: a free shard whose key lists it as a standby there, reported
//     ready (a lost owner's shard given to its most advanced standby, a
//     warm move's end): shed, it would start cold elsewhere;
//   - 1: a shard the member holds: shed, it costs a hand-off (warm when
//     its target runs standbys);
//   - 2: a held shard already on its way out (a hand-off in flight, or a
//     warm move under way): shedding it again keeps the earlier decision,
//     where keeping it would undo it and shed another;
//   - 3: any other, which moves for nothing.
//
// So a member whose standbys take more of a lost owner's shards than its
// quota keeps them and hands off a shard it held, warm, instead of
// sending them cold. A member on probation or stuck keeps what it holds
// first: it is given no more than that (capacities).
func (st *step) keepRank(i int) int {
	m := st.next[i]
	switch {
	case st.holder[i] >= 0 && (st.flags[i]&inHolderKey == 0 || st.prepTo != nil && st.prepTo[i] >= 0):
		return 2
	case st.holder[i] >= 0:
		return 1
	case m < 0 || st.stuck[m] || st.probation[m] || st.warmTo == nil:
		return 3
	}
	if _, listed := slices.BinarySearch(st.standby[m], int32(i)); listed && st.mayStandby(i, m) && st.members[m].Standbys[st.shards[i]].Ready {
		return 0
	}
	return 3
}

// mayStandby reports whether member m may run a standby of shard i (or be
// given it as its warm target): it runs standbys, is neither stuck,
// cordoned nor draining, does not hold the shard, and the rules allow it.
func (st *step) mayStandby(i int, m int32) bool {
	return st.members[m].Standby && !st.stuck[m] && !st.cordoned[m] && !st.draining[m] &&
		st.holder[i] != m && st.rules.allows(i, m)
}

// better reports whether member a's standby of shard i is more advanced
// than member b's, as they report them: ready first, then the higher
// Applied; a tie keeps b (the first by ID).
func (st *step) better(i int, a, b int32) bool {
	id := st.shards[i]
	x, y := st.members[a].Standbys[id], st.members[b].Standbys[id]
	if x.Ready != y.Ready {
		return x.Ready
	}
	return x.Applied > y.Applied
}

// continues reports whether shard i's warm move is under way and goes on:
// a member may be given it prepares it, its holder still keeps it, and
// the plan still moves it off its holder (in count balance: a drain
// undone ends its preparations; load moves are not planned again while
// one is under way, so in load balance it goes on).
func (st *step) continues(i int) bool {
	if st.prepTo == nil || st.prepTo[i] < 0 {
		return false
	}
	h := st.holder[i]
	return h >= 0 && st.flags[i]&inHolderKey != 0 && (st.load != nil || st.target[i] != h)
}

// warmInFlight reports whether shard i is a warm move handed off and in
// flight: a member that may be given it prepared it, and its holder's key
// no longer lists it.
func (st *step) warmInFlight(i int) bool {
	if st.prepTo == nil || st.prepTo[i] < 0 {
		return false
	}
	h := st.holder[i]
	return h >= 0 && st.flags[i]&inHolderKey == 0
}

// warmBusy reports whether a warm move is under way or in flight: load
// moves wait until none is (see above).
func (st *step) warmBusy() bool {
	if st.prepTo == nil {
		return false
	}
	for i := range st.prepTo {
		if st.continues(i) || st.warmInFlight(i) {
			return true
		}
	}
	return false
}

// movesTo is where hand-off i goes: its warm target while a warm move of
// it is under way, else its target.
func (st *step) movesTo(i int) int32 {
	if st.prepTo != nil && st.prepTo[i] >= 0 {
		return st.prepTo[i]
	}
	return st.target[i]
}

// warmTarget is shard i's warm target, or -1.
func (st *step) warmTarget(i int) int32 {
	if st.warmTo == nil {
		return -1
	}
	return st.warmTo[i]
}

// prepare decides whether hand-off i, which decide is starting, must
// wait for a standby: the member it moves to runs standbys, that standby
// has not reported ready, and it has been preparing for less than
// PrepareTimeout. A hand-off whose preparation timed out is recorded as
// cold.
func (st *step) prepare(i int32) bool {
	t := st.movesTo(int(i))
	if t < 0 || !st.members[t].Standby {
		return false
	}
	id := st.shards[i]
	if st.members[t].Standbys[id].Ready {
		// Handed off at once, and on its way as any warm move: the
		// target's key keeps listing it, with a start, until it holds it.
		st.warmNow = append(st.warmNow, warmMove{i, t})
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

// warmMove is a shard and the member a warm move takes it to.
type warmMove struct{ i, to int32 }

// preparingSince is when shard i's warm move to member t started, as t's
// key says, if it lists the shard as a standby with a start (one stamped
// after now counts from now).
func (st *step) preparingSince(i int, t int32) (time.Time, bool) {
	if _, listed := slices.BinarySearch(st.standby[t], int32(i)); !listed {
		return time.Time{}, false
	}
	since, ok := st.keys[t].Preparing[st.shards[i]]
	if since.After(st.now) {
		since = st.now
	}
	return since, ok
}

// warmKeys returns, per member, the Standby and Preparing of its key
// after this step (nil when no member has either): the shards preparing
// for it and those on their way to it, with their start, and the
// standbys for failover (failover).
func (st *step) warmKeys() ([][]shard.ID, []map[shard.ID]time.Time) {
	if len(st.prepared) == 0 && len(st.warmNow) == 0 && st.warmTo == nil && st.p.Standbys <= 0 {
		return nil, nil
	}
	w := len(st.members)
	lists := st.failover()
	preps := make([]map[shard.ID]time.Time, w)
	prep := func(i, t int32) {
		lists[t] = append(lists[t], i)
		since, ok := st.preparingSince(int(i), t)
		if !ok {
			since = st.now
		}
		if preps[t] == nil {
			preps[t] = map[shard.ID]time.Time{}
		}
		preps[t][st.shards[i]] = since
	}
	for _, mv := range st.prepared {
		prep(mv.i, mv.to)
	}
	for _, mv := range st.warmNow {
		prep(mv.i, mv.to)
	}
	for t, list := range st.standby {
		for _, i := range list {
			switch {
			case st.flags[i]&preparing != 0 || !st.onItsWay(int(i), int32(t)):
			case st.prepTo[i] == int32(t):
				prep(i, int32(t))
			default:
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

// onItsWay reports whether shard i, which member t's key lists as a
// standby, is on its way to t, so that t's standby goes on until t holds
// it (its worker then promotes it): t's key lists it after this step (a
// warm move placed, or a lost owner's shard given to its standby), or a
// warm move to t is in flight (its holder's key no longer lists it).
func (st *step) onItsWay(i int, t int32) bool {
	if !st.members[t].Standby || st.holder[i] == t {
		return false
	}
	return st.next[i] == t || (st.next[i] < 0 && st.holder[i] >= 0 && st.prepTo[i] == t)
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
// (zero when none prepares). Each is after now: one that timed out was
// handed off cold instead.
func (st *step) prepareWake() time.Time {
	var wake time.Time
	for _, mv := range st.prepared {
		since, ok := st.preparingSince(int(mv.i), mv.to)
		if !ok {
			since = st.now
		}
		if at := since.Add(st.p.PrepareTimeout); wake.IsZero() || at.Before(wake) {
			wake = at
		}
	}
	return wake
}
