package rebalance

import (
	"math/bits"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Flags of a shard in one step.
const (
	orphaned    uint8 = 1 << iota // its lock or a key of a worker that is not live names it
	inHolderKey                   // its live holder's key lists it
	inManyKeys                    // more than one live member's key lists it
	inStuckKey                    // a stuck member's key lists it
	handedOff                     // this step starts its hand-off
	loadMoved                     // planned as a load move (planLoad)
	preparing                     // a warm move waits for its target's standby (warm.go)
	warmPending                   // free, in no key: counts for its warm target (warm.go)
)

// step is the working state of one Step. Per-shard slices are indexed like
// in.shards, per-member ones like in.members.
type step struct {
	*stepInput
	p Policy

	stuck     []bool // judged stuck (now or before, under its current session)
	probation []bool // a verdict expired and the member has not yet taken a shard since
	cordoned  []bool // cordoned, and not every member is
	draining  []bool // drains, and not every member does
	freeIn    []int  // free shards in the key as read
	freeOut   []int  // free shards in the key after this step

	firstKey []int32 // the first live member whose key lists the shard, or -1
	pending  []int32 // the first member not stuck whose key lists the shard, or -1
	target   []int32 // where the shard belongs, or -1 (no member has room)
	next     []int32 // whose key lists it after this step, or -1

	loadMoves []int32             // load moves planned, in the order to start them
	loadWake  time.Time           // when a load move held back by patience or residence may become possible
	loadBand  *Band               // the band as judged before the load moves
	band      []time.Time         // each member's OutOfBand mark, when the load moves were planned (else nil: marks stay)
	started   int                 // hand-offs this step starts, or prepares (warm moves waiting for their standby)
	prepared  []warmMove          // warm moves waiting for their standby, in start order
	warmNow   []warmMove          // hand-offs this step starts to a ready standby: warm without waiting
	cold      []warmMove          // hand-offs made cold: their standby was not ready in PrepareTimeout
	warmTo    []int32             // per shard, its warm target (warmTargets), or -1; nil when no key lists standbys
	prepTo    []int32             // per shard, the member a warm move of it under way goes to, or -1; nil with warmTo
	listers   func(i int) []int32 // the members whose key lists shard i as a standby; nil with warmTo

	ruleOut     int     // shards hard rules let no member be given: the quotas share the others
	ruleFixed   []int   // per member, a quota hard rules forced (planRules), or -1; nil when none
	unplaceable []int32 // hard-ruled shards no member may take (planRules)
}

func newStep(in *stepInput, p Policy) *step {
	n, w := len(in.shards), len(in.members)
	st := &step{
		stepInput: in, p: p,
		stuck: make([]bool, w), probation: make([]bool, w), cordoned: make([]bool, w), draining: make([]bool, w), freeIn: make([]int, w), freeOut: make([]int, w),
		firstKey: in.sc.int32s(n), pending: in.sc.int32s(n), next: in.sc.int32s(n),
	}
	allDrain, allCordoned := true, true
	for _, m := range in.members {
		allDrain = allDrain && m.Draining
		allCordoned = allCordoned && m.Cordoned
	}
	for m, mem := range in.members {
		st.draining[m] = mem.Draining && !allDrain
		st.cordoned[m] = mem.Cordoned && !allCordoned
	}
	return st
}

// plan computes every shard's target. A shard counts for its live holder,
// or else for the first member not stuck whose key lists it (so that a
// free shard assigned and not yet taken stays where it was assigned: that is
// what keeps assignments from flapping between steps), or else for its
// warm target (warm.go). Quotas are by
// weight with the largest remainder (capacities), except that a stuck
// member's quota is at most what it holds and the members not stuck share
// the rest. Then every member keeps
// min(count, quota) of its shards, those it holds first, and the shards
// nobody keeps are placed on the ring among the members with room.
func (st *step) plan() {
	n, w := len(st.shards), len(st.members)
	for i := range n {
		st.firstKey[i], st.pending[i] = -1, -1
	}
	for m := range int32(w) {
		for _, i := range st.sets[m] {
			if st.firstKey[i] < 0 {
				st.firstKey[i] = m
			} else {
				st.flags[i] |= inManyKeys
			}
			if st.holder[i] == m {
				st.flags[i] |= inHolderKey
			}
			if st.stuck[m] {
				st.flags[i] |= inStuckKey
			} else if st.pending[i] < 0 && !st.cordoned[m] {
				st.pending[i] = m
			}
		}
	}
	// A free shard in no key counts for its warm target: the end of a
	// warm move, or the most advanced standby of a lost owner's shard,
	// gets it while it has room. (A shard its live holder released, cold,
	// does not: it goes where its hand-off meant it to.)
	if st.warmTargets(); st.warmTo != nil {
		for i, t := range st.warmTo {
			if t >= 0 && st.pending[i] < 0 && st.holder[i] < 0 && (st.prepTo[i] == t || st.flags[i]&orphaned != 0) {
				st.pending[i] = t
				st.flags[i] |= warmPending
			}
		}
	}

	// Each shard counts for its holder or else its pending member; next
	// holds that until decide sets it.
	held, owned := make([]int, w), make([]int, w)
	for i, h := range st.holder {
		c := st.pending[i]
		if h >= 0 {
			c = h
			held[h]++
		}
		if st.next[i] = c; c >= 0 {
			owned[c]++
		}
	}
	if st.rules != nil && st.load == nil {
		st.planRules()
		return
	}
	caps := st.capacities(owned, held)
	if st.load != nil {
		st.planLoad(caps, owned)
		return
	}
	target, room := keep(st.shards, st.ids, st.next, st.keepRank, caps, st.sc.int32s(len(st.shards)))
	placeFree(st.shards, st.ids, target, room)
	st.target = target
}

// capacities are the members' quotas (of the shards but those hard rules
// let no member be given): by weight with the largest
// remainder (the function capacities), except that a stuck member's quota
// is min(held, ⌈its weighted share⌉), a member on probation's
// min(held+1, ⌈its weighted share⌉) (one shard to show it takes what it is
// given), a cordoned member's is what it holds (none if it also drains),
// and the other members share the rest by weight. These quotas depend on
// nothing that moves between steps (not on who got the rounding slots,
// which follows the others' counts), so a decision written and read back
// plans the same. If
// every member is stuck, the shards they do not hold have no quota anywhere
// and stay free.
func (st *step) capacities(owned, held []int) []int {
	if len(st.members) == 0 {
		return nil
	}
	ws := effectiveWeights(st.members)
	if st.ruleFixed == nil && !slices.Contains(st.stuck, true) && !slices.Contains(st.probation, true) && !slices.Contains(st.cordoned, true) {
		return zonedCapacities(len(st.shards)-st.ruleOut, st.ids, zonesOf(st.members), ws, owned)
	}
	var sum uint64
	for _, w := range ws {
		sum += w
	}
	caps := make([]int, len(st.members))
	rest := len(st.shards) - st.ruleOut
	var others []int
	for m := range st.members {
		if st.ruleFixed != nil && st.ruleFixed[m] >= 0 {
			caps[m] = st.ruleFixed[m]
			rest -= caps[m]
		} else if st.cordoned[m] {
			if !st.draining[m] {
				caps[m] = held[m]
			}
			rest -= caps[m]
		} else if st.stuck[m] || st.probation[m] {
			hi, lo := bits.Mul64(uint64(len(st.shards)-st.ruleOut), ws[m])
			q, r := bits.Div64(hi, lo, sum) // as in capacities: cannot panic
			if r > 0 {
				q++
			}
			caps[m] = min(held[m], int(q))
			if st.probation[m] {
				caps[m] = min(held[m]+1, int(q))
			}
			rest -= caps[m]
		} else {
			others = append(others, m)
		}
	}
	// A probation's one shard more normally comes out of the other
	// members' share (a hand-off to the member on probation). When the
	// fixed quotas leave less than nothing for the others (few shards, all
	// held), the +1s are taken back, last member first: the other fixed
	// quotas are at most what their members hold, so none goes negative.
	for m := len(caps) - 1; m >= 0 && rest < 0; m-- {
		if st.probation[m] && caps[m] > held[m] {
			caps[m]--
			rest++
		}
	}
	if len(others) == 0 {
		return caps
	}
	rest = max(rest, 0) // quotas hard rules forced may leave the others nothing
	ids, members, sub := make([]string, len(others)), make([]Member, len(others)), make([]int, len(others))
	for k, m := range others {
		ids[k], members[k], sub[k] = st.ids[m], st.members[m], owned[m]
	}
	for k, c := range zonedCapacities(rest, ids, zonesOf(members), effectiveWeights(members), sub) {
		caps[others[k]] = c
	}
	return caps
}

// zones are the members' zones, in order.
func zonesOf(ms []Member) []string {
	zs := make([]string, len(ms))
	for i, m := range ms {
		zs[i] = m.Zone
	}
	return zs
}

// decide sets every shard's key after this step. A free shard goes to its
// target's key. A held shard stays in its holder's key when its target is
// the holder (or it has none); otherwise it must be handed off: out of the
// holder's key first, into another key only once it is free. Hand-offs in
// flight (held, not in the holder's key) count against MaxMovesInFlight,
// and new ones start, draining holders first and then in shard order, only
// while there is room under it. A hand-off to a member that runs standbys
// is warm: it first waits in its holder's key, counted under the cap like
// a hand-off, until the target's standby is ready (prepare).
func (st *step) decide() {
	inFlight := 0
	var preparing, drains, others []int32
	for i, h := range st.holder {
		t := st.target[i]
		switch {
		case st.continues(i):
			st.next[i] = h
			preparing = append(preparing, int32(i)) // a warm move under way goes on, whatever the plan says now
		case st.warmInFlight(i):
			st.next[i] = -1 // a warm move handed off goes on too
			inFlight++
		case h < 0:
			st.next[i] = t
		case t == h || (t < 0 && st.rules.allows(i, h)):
			st.next[i] = h
		case t < 0 && st.flags[i]&inHolderKey == 0:
			st.next[i] = -1 // released by a holder the rules exclude, nobody to take it
			inFlight++
		case t < 0:
			st.next[i] = h
			drains = append(drains, int32(i)) // the rules exclude its holder: release it
		case st.flags[i]&inHolderKey == 0:
			st.next[i] = -1
			inFlight++
		default:
			st.next[i] = h
			switch {
			case st.draining[h]:
				drains = append(drains, int32(i))
			case st.flags[i]&loadMoved == 0:
				others = append(others, int32(i))
			}
		}
	}
	budget := st.p.MaxMovesInFlight - inFlight
	if st.frozen {
		budget = 0
	}
	wanted := slices.Concat(preparing, drains, others)
	if len(wanted) == 0 || !st.warmFleet() {
		wanted = append(wanted, st.loadMoves...) // load moves last, most useful first
	}
	st.started = max(0, min(budget, len(wanted)))
	for _, i := range wanted[:st.started] {
		if st.prepare(i) {
			continue // its holder keeps it until the target's standby is ready
		}
		st.next[i] = -1
		st.flags[i] |= handedOff
	}
}

// inKey reports whether member m's key as read lists shard i.
func (st *step) inKey(i int, m int32) bool {
	if st.flags[i]&inManyKeys == 0 {
		return st.firstKey[i] == m
	}
	_, found := slices.BinarySearch(st.sets[m], int32(i))
	return found
}

// decision collects the keys that change, the moves, and the wake-up.
func (st *step) decision() Decision {
	w := len(st.members)
	d := Decision{Delete: st.dead, ByLoad: st.load != nil, Band: st.loadBand}
	for _, i := range st.unplaceable {
		d.Unplaceable = append(d.Unplaceable, st.shards[i])
	}
	slices.Sort(d.Unplaceable)
	count, same := make([]int, w), make([]int, w)
	for i, m := range st.next {
		if m >= 0 {
			count[m]++
			if st.holder[i] < 0 {
				st.freeOut[m]++
			}
		}
	}
	for m, set := range st.sets {
		for _, i := range set {
			if int(st.next[i]) == m {
				same[m]++
			}
		}
	}
	changed := make([]bool, w)
	lists := make([][]shard.ID, w)
	frees := make([][]shard.ID, w)
	held := make([]bool, w)
	for _, h := range st.holder {
		if h >= 0 {
			held[h] = true
		}
	}
	for m := range w {
		changed[m] = same[m] != len(st.sets[m]) || same[m] != count[m] || (!st.keyed[m] && held[m])
		if changed[m] {
			lists[m] = make([]shard.ID, 0, count[m])
		}
	}
	var arrived []map[shard.ID]time.Time // only in load balance
	if st.load != nil {
		arrived = make([]map[shard.ID]time.Time, w)
	}
	for i, m := range st.next {
		if m >= 0 && changed[m] {
			lists[m] = append(lists[m], st.shards[i])
			if st.load != nil {
				arrived[m] = st.arrival(arrived[m], i, m)
			}
		}
		if m >= 0 && st.holder[i] < 0 {
			frees[m] = append(frees[m], st.shards[i])
		}
		if st.flags[i]&handedOff != 0 || (m >= 0 && st.holder[i] < 0) {
			if mv, ok := st.move(i); ok {
				d.Moves = append(d.Moves, mv)
			}
		}
	}
	standbys, preps := st.warmKeys()
	for m := range w {
		key, write := st.nextKey(m, lists[m], frees[m], changed[m], same[m] == len(st.sets[m]))
		if changed[m] {
			key.Arrived = nil
			if arrived != nil {
				key.Arrived = arrived[m]
			}
		}
		if standbys != nil && !sameWarm(key, standbys[m], preps[m]) {
			if !write && !changed[m] { // the same shards, sorted, in a slice of its own
				key.Shards = st.keyShards(m)
			}
			key.Standby, key.Preparing, write = standbys[m], preps[m], true
		}
		if write {
			if d.Assign == nil {
				d.Assign = map[string]Assignment{}
			}
			d.Assign[st.ids[m]] = key
		}
		var at time.Time
		switch {
		case st.stuck[m]:
			at = st.probationAt(key)
		case key.Waiting > 0:
			at = key.WaitingSince.Add(st.p.StuckAfter)
		}
		if !at.IsZero() && (d.Wake.IsZero() || at.Before(d.Wake)) {
			d.Wake = at
		}
	}
	if at := st.prepareWake(); !at.IsZero() && (d.Wake.IsZero() || at.Before(d.Wake)) {
		d.Wake = at
	}
	d.Preparing, d.Cold = st.warmTransfers(st.prepared), st.warmTransfers(st.cold)
	// A load move held back by residence: step again when it may be made,
	// unless a hand-off starts (its release wakes the assignor anyway, and
	// a decision read back, with the hand-off in flight, plans no load
	// move and so sets no such wake: the written decision stays a fixed
	// point).
	if at := st.loadWake; !at.IsZero() && st.started == 0 && (d.Wake.IsZero() || at.Before(d.Wake)) {
		d.Wake = at
	}
	return d
}

// move returns the Transfer of shard i in this step, if it has one: a
// hand-off started, or a free shard added to a key that did not list it.
func (st *step) move(i int) (Transfer, bool) {
	s := st.shards[i]
	if st.flags[i]&handedOff != 0 {
		h := st.holder[i]
		why := st.reasonOf(h)
		if st.flags[i]&loadMoved != 0 {
			why = shard.ReasonLoad
		}
		to := ""
		if t := st.movesTo(i); t >= 0 {
			to = st.ids[t]
		}
		return Transfer{Shard: s, From: st.ids[h], To: to, Reason: why}, true
	}
	to := st.next[i]
	if st.holder[i] >= 0 || to < 0 || st.inKey(i, to) {
		return Transfer{}, false
	}
	mv := Transfer{Shard: s, To: st.ids[to], Reason: shard.ReasonFree}
	switch {
	case st.pending[i] >= 0 && st.flags[i]&warmPending == 0: // a key lists it, not only a standby
		mv.Reason = st.reasonOf(st.pending[i])
	case st.flags[i]&inStuckKey != 0:
		mv.Reason = shard.ReasonStuck
	case st.flags[i]&orphaned != 0:
		mv.Reason = shard.ReasonOrphaned
	}
	return mv, true
}

// arrival records in arrived, member m's new key's arrivals, when shard i
// (listed in it) arrived: now if the key as read does not list it, else
// when the key as read says, while that is less than MinResidence ago.
func (st *step) arrival(arrived map[shard.ID]time.Time, i int, m int32) map[shard.ID]time.Time {
	id := st.shards[i]
	at, ok := st.now, !st.inKey(i, m)
	if !ok {
		at, ok = st.keys[m].Arrived[id]
		ok = ok && st.now.Sub(at) < st.p.Load.MinResidence
	}
	if !ok {
		return arrived
	}
	if arrived == nil {
		arrived = map[shard.ID]time.Time{}
	}
	arrived[id] = at
	return arrived
}

// reasonOf is why a shard leaves member m's key while m is live and not
// stuck.
func (st *step) reasonOf(m int32) shard.Reason {
	if st.draining[m] {
		return shard.ReasonDrain
	}
	return shard.ReasonRebalance
}
