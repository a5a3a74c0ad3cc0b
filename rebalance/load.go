package rebalance

import (
	"fmt"
	"math"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// readLoads returns each shard's load from loads, indexed like the shard
// set, or nil when Step is to balance counts: loads is nil, or every shard
// of the set has the same load (a fleet that reports nothing yet, or equal
// loads, is balanced exactly as by counts). A shard missing from loads
// counts as the mean of the others; entries for shards outside the set
// are ignored. A negative, NaN or infinite load is a problem naming the
// shard and the value.
func readLoads(loads map[shard.ID]float64, index shardIndex, n int, problems []string) ([]float64, []string) {
	if loads == nil {
		return nil, problems
	}
	load := make([]float64, n)
	known := make([]bool, n)
	for id, l := range loads {
		i, ok := index.find(id)
		if !ok {
			continue
		}
		if l < 0 || math.IsNaN(l) || math.IsInf(l, 0) {
			problems = append(problems, fmt.Sprintf("shard %q has load %v (want a finite number ≥ 0)", id, l))
			continue
		}
		load[i], known[i] = l, true
	}
	// The mean of the known loads, summed in shard order so that the
	// result does not depend on the map's order; the same load everywhere
	// (the missing ones taking it exactly) is count balance.
	var sum, first float64
	count, uniform := 0, true
	for i, ok := range known {
		if ok {
			if count == 0 {
				first = load[i]
			}
			uniform = uniform && load[i] == first
			sum += load[i]
			count++
		}
	}
	if count == 0 || uniform {
		return nil, problems
	}
	mean := sum / float64(count)
	for i, ok := range known {
		if !ok {
			load[i] = mean
		}
	}
	return load, problems
}

// eligible reports, for every member, whether it takes part in load
// balancing: it may be given shards and its shards may be moved for load.
// Stuck, cordoned and probation members do not (they keep what count
// balance lets them keep; one on probation is also given a free shard to
// take, see probe); draining members do not, unless every member that is
// neither stuck, on probation nor cordoned drains (then, as in count
// balance, they must take the shards).
func (st *step) eligible() []bool {
	el := make([]bool, len(st.members))
	working := false
	for m := range st.members {
		working = working || (!st.stuck[m] && !st.probation[m] && !st.cordoned[m] && !st.draining[m])
	}
	for m := range st.members {
		el[m] = !st.stuck[m] && !st.probation[m] && !st.cordoned[m] && (!st.draining[m] || !working)
	}
	return el
}

// capacityOf is member m's capacity for load: its weight as the quotas use
// it (≤ 0 counts as 1, at most maxWeight), draining ignored (a draining
// member is eligible only when it must take shards).
func capacityOf(m Member) float64 {
	switch {
	case m.Weight <= 0:
		return 1
	case uint64(m.Weight) > maxWeight:
		return float64(maxWeight)
	}
	return float64(m.Weight)
}

// planLoad is plan for load balance. caps and owned are count balance's
// quotas and each member's shards (held, or else assigned and not yet
// taken). Members that are not eligible keep what count balance lets them
// keep (keep, with their quotas); eligible members keep everything they
// hold in their key and everything assigned to them. Then every shard
// nobody keeps (free, shed, or held outside its holder's key: a hand-off
// in flight; not so for a holder without any key, whose shards it keeps and
// which must be given a key listing them) is placed on the eligible member whose load per capacity is
// lowest after placing it, heaviest first; a hand-off in flight is not
// placed back on its holder (unless no other member may take it), so it
// finishes. Last, if no hand-off will be in flight after this step and the
// fleet is not frozen, load moves are planned (see loadPlan.moves).
func (st *step) planLoad(caps, owned []int) {
	el := st.eligible()
	kcaps := slices.Clone(caps)
	for m, ok := range el {
		if ok {
			kcaps[m] = owned[m]
		}
	}
	target, _ := keep(st.shards, st.ids, st.allowedOwners(), st.keepRank, kcaps, st.sc.int32s(len(st.shards)))
	st.target = target
	lp := newLoadPlan(st, el)
	var pool []int32
	for i, t := range target {
		h := st.holder[i]
		if t < 0 || (h >= 0 && t == h && el[h] && st.flags[i]&inHolderKey == 0 && st.keyed[h]) {
			pool = append(pool, int32(i))
			continue
		}
		if el[t] {
			lp.add(i, t)
		}
	}
	slices.SortStableFunc(pool, func(a, b int32) int { // heaviest first, then shard order
		switch la, lb := st.load[a], st.load[b]; {
		case la > lb:
			return -1
		case la < lb:
			return 1
		}
		return 0
	})
	pool = st.probe(pool, target, kcaps)
	if !slices.Contains(el, true) {
		// Nobody else may take a shard: the unkept stay free or with
		// their holders, and a hard-ruled one nobody the rules allow
		// keeps is unplaceable.
		for _, i := range pool {
			if h := st.holder[i]; st.rules.hardAt(int(i)) && (h < 0 || !st.rules.allows(int(i), h)) {
				st.unplaceable = append(st.unplaceable, i)
			}
		}
		return
	}
	inFlight, starts := 0, 0
	fb := fallback{st: st, target: target}
	for _, i := range pool {
		h := st.holder[i]
		t := lp.place(int(i), h)
		if t < 0 && h >= 0 && st.rules.allows(int(i), h) {
			t = h // no other member may take it: it stays
		}
		if t < 0 && st.rules.hardAt(int(i)) {
			// No member taking part may own it: one that drains may, as
			// in count balance, else nobody may.
			if t = fb.take(int(i)); t < 0 {
				st.unplaceable = append(st.unplaceable, i)
			}
		}
		target[i] = t
		if t >= 0 && el[t] {
			lp.add(int(i), t)
		}
		if h >= 0 && t != h {
			if st.flags[i]&inHolderKey == 0 {
				inFlight++
			} else {
				starts++
			}
		}
	}
	budget := st.p.MaxMovesInFlight - starts
	lp.resum()
	st.loadBand = lp.band()
	if st.frozen || inFlight > 0 || budget <= 0 || st.warmBusy() {
		return
	}
	st.loadMoves, st.loadWake = lp.moves(budget)
}

// fallback places, in load balance, a hard-ruled shard that no member
// taking part may own on a member that may be given shards (one that
// drains) and that the rules allow, the one with the fewest shards
// targeted; -1 when there is none.
type fallback struct {
	st     *step
	target []int32
	count  []int // shards targeted per member, counted on first use
}

func (fb *fallback) take(i int) int32 {
	st := fb.st
	if fb.count == nil {
		fb.count = make([]int, len(st.members))
		for _, t := range fb.target {
			if t >= 0 {
				fb.count[t]++
			}
		}
	}
	best := int32(-1)
	for m := range int32(len(st.members)) {
		if st.placeable(m) && st.rules.allows(i, m) && (best < 0 || fb.count[m] < fb.count[best]) {
			best = m
		}
	}
	if best >= 0 {
		fb.count[best]++
	}
	return best
}

// allowedOwners is st.next with the owners the placement rules exclude
// replaced by -1 (st.next itself without rules): such a shard is kept by
// nobody and placed again.
func (st *step) allowedOwners() []int32 {
	if st.rules == nil {
		return st.next
	}
	out := st.sc.int32s(len(st.next))
	for i, o := range st.next {
		if o >= 0 && !st.rules.allows(i, o) {
			o = -1
		}
		out[i] = o
	}
	return out
}

// probe gives every member on probation that has room under its quota
// (kcaps: what it holds plus one, at most) the lightest free shard of pool
// (shard order among equals), as count balance's quota would: in load
// balance it takes part in no placement, and taking a shard it is given
// is how it shows progress. It returns the pool without the shards it
// gave. A member on probation while no shard is free is tested when one
// is.
func (st *step) probe(pool, target []int32, kcaps []int) []int32 {
	if !slices.Contains(st.probation, true) {
		return pool
	}
	room := slices.Clone(kcaps)
	for _, t := range target {
		if t >= 0 {
			room[t]--
		}
	}
	for m, on := range st.probation {
		if !on || room[m] <= 0 {
			continue
		}
		best := -1
		for k, i := range pool {
			if st.holder[i] < 0 && st.rules.allows(int(i), int32(m)) && (best < 0 || st.load[i] < st.load[pool[best]]) {
				best = k
			}
		}
		if best < 0 {
			return pool
		}
		target[pool[best]] = int32(m)
		pool = slices.Delete(pool, best, best+1)
	}
	return pool
}

// loadPlan is the load per eligible member during one step's plan.
type loadPlan struct {
	st    *step
	el    []bool
	cap   []float64 // capacity of each member (eligible ones only used)
	sum   []float64 // load of the shards targeted to each eligible member
	count []int     // how many shards are targeted to each eligible member
	mean  float64   // the band's centre (moves)
}

func newLoadPlan(st *step, el []bool) *loadPlan {
	w := len(st.members)
	lp := &loadPlan{st: st, el: el, cap: make([]float64, w), sum: make([]float64, w), count: make([]int, w)}
	for m, mem := range st.members {
		lp.cap[m] = capacityOf(mem)
	}
	return lp
}

// add targets shard i to eligible member m.
func (lp *loadPlan) add(i int, m int32) {
	lp.sum[m] += lp.st.load[i]
	lp.count[m]++
}

// place returns the eligible member other than not that the placement
// rules allow shard i, with the lowest load per capacity once shard i is
// added, or -1 when there is none. Ties go
// to the member with fewer shards per capacity (so that shards of no load
// spread by count), then to the lower ID.
func (lp *loadPlan) place(i int, not int32) int32 {
	l := lp.st.load[i]
	best := int32(-1)
	var bestRatio, bestCount float64
	for m, ok := range lp.el {
		if !ok || int32(m) == not || !lp.st.rules.allows(i, int32(m)) {
			continue
		}
		r, c := (lp.sum[m]+l)/lp.cap[m], float64(lp.count[m]+1)/lp.cap[m]
		if best < 0 || r < bestRatio || (r == bestRatio && c < bestCount) {
			best, bestRatio, bestCount = int32(m), r, c
		}
	}
	return best
}

// resum recomputes every eligible member's load in shard order, so that
// the moves are planned from sums that depend only on which shards each
// member has, not on the order they were placed in: a decision written and
// read back must plan the same (floating-point addition is not
// associative).
func (lp *loadPlan) resum() {
	clear(lp.sum)
	for i, t := range lp.st.target {
		if t >= 0 && lp.el[t] {
			lp.sum[t] += lp.st.load[i]
		}
	}
}
