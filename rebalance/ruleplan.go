package rebalance

import (
	"cmp"
	"container/heap"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// maxRuleRounds bounds how often planRules raises the quotas of members
// that hard rules fill beyond them. Each round fixes at least one more
// member or raises one's quota, and in practice one round settles.
const maxRuleRounds = 8

// leave marks, in a target slice, a shard that must stay without a
// target: placeFree places only the shards whose target is -1.
const leave int32 = -2

// planRules is plan under placement rules. A member keeps the shards it
// owns that the rules allow it, up to its quota (hard-ruled shards first,
// then those it holds, then those a prefer rule gives it, then by score);
// the shards nobody keeps are placed, the classes with the fewest members
// that may take them first, each on the member that may take it with the
// most room (those a prefer rule selects first). When every member that
// may take a hard-ruled shard is full, one of them gives up a shard no
// hard rule ties (which goes back to be placed anywhere), and only when
// none has such a shard is it filled beyond its quota. A member so filled
// keeps exactly its hard-ruled shards: its quota is raised to them and
// the others share the rest, and the plan is made again.
func (st *step) planRules() {
	st.ruleOut = st.rules.strand(st)
	held := make([]int, len(st.members))
	for i, h := range st.holder {
		if h >= 0 && st.rules.allows(i, h) && !st.rules.quotaFree(i) {
			held[h]++ // a cordoned or stuck member's quota counts only what it may keep
		}
	}
	// The quotas' rounding slots go by weight and ID alone, not to the
	// members that own more: what hard rules force depends on the quotas,
	// and quotas that followed the owners would differ between a shard
	// held and the same shard released, so a hand-off could be undone by
	// the placement after it.
	owned := make([]int, len(st.members))
	forced := make([]int, len(st.members))
	for m := range forced {
		forced[m] = -1
	}
	allowed := st.rules.allowedCounts(len(st.members))
	caps := st.ruleCaps(owned, held, forced, allowed)
	for round := 0; ; round++ {
		target, room := st.placeByRules(caps)
		raised := false
		for m, r := range room {
			if r < 0 {
				forced[m], raised = caps[m]-r, true
			}
		}
		if !raised || round == maxRuleRounds {
			st.target = target
			return
		}
		caps = st.ruleCaps(owned, held, forced, allowed)
	}
}

// ruleCaps are the quotas under rules: a member's is forced[m] where that
// is set (≥ 0: what hard rules filled it with); a member the rules allow
// fewer shards than its quota would be holds them all; the others share
// the rest as capacities shares it. Water-filling: the members capped by
// what they are allowed are found again whenever forced changes.
func (st *step) ruleCaps(owned, held, forced, allowed []int) []int {
	fixed := slices.Clone(forced)
	st.ruleFixed = fixed
	caps := st.capacities(owned, held)
	for range st.members {
		capped := false
		for m, c := range caps {
			if fixed[m] < 0 && c > allowed[m] {
				fixed[m], capped = allowed[m], true
			}
		}
		if !capped {
			break
		}
		caps = st.capacities(owned, held)
	}
	return caps
}

// placeByRules is one round of planRules under quotas caps: each shard's
// target (-1: none) and each member's room left (negative when hard rules
// filled it beyond its quota).
func (st *step) placeByRules(caps []int) (target []int32, room []int) {
	pl := st.rules
	n, w := len(st.shards), len(st.members)
	st.unplaceable = st.unplaceable[:0]
	rp := &rulePlan{st: st, target: st.sc.int32s(n), caps: caps, room: slices.Clone(caps), hardOf: make([]int, w), weight: st.ruleWeights(),
		mine: make([][]int32, w), placed: make([][]int32, w), ranked: make([]bool, w)}
	rp.orderClasses()
	for i := range n {
		rp.target[i] = -1
		if o := st.next[i]; o >= 0 && pl.allows(i, o) && !pl.quotaFree(i) {
			rp.mine[o] = append(rp.mine[o], int32(i))
		}
	}
	for m, list := range rp.mine {
		if len(list) > caps[m] {
			rp.rank(int32(m))
			list = list[:max(caps[m], 0)]
		}
		for _, i := range list {
			rp.target[i] = int32(m)
			if pl.hardAt(int(i)) {
				rp.hardOf[m]++
			}
		}
		rp.room[m] -= len(list)
		rp.mine[m] = list
	}

	// The shards left, by class; class 0 goes on the ring last.
	pending := make([][]int32, len(pl.classes))
	for i := range n {
		switch h := st.holder[i]; {
		case rp.target[i] >= 0:
		case h >= 0 && pl.quotaFree(i) && pl.allows(i, h):
			rp.target[i] = leave // outside the quotas, with a holder the rules allow: decide keeps it there
		default:
			pending[pl.class[i]] = append(pending[pl.class[i]], int32(i))
		}
	}
	for pos, k := range rp.order {
		rp.cur = pos
		rp.placeClass(k, pending[k])
		// Shards given up to make room join the pending lists of classes
		// later in the order (rank and give see to that).
		for _, i := range rp.given {
			pending[pl.class[i]] = append(pending[pl.class[i]], i)
		}
		rp.given = rp.given[:0]
	}
	// Class 0 on the ring, among the members that may be given shards.
	for m := range rp.room {
		if rp.room[m] > 0 && !st.placeable(int32(m)) {
			rp.room[m] = 0
		}
	}
	placeFree(st.shards, st.ids, rp.target, rp.room)
	for i, t := range rp.target {
		if t == leave {
			rp.target[i] = -1
		}
	}
	return rp.target, rp.room
}

// rulePlan is the working state of one round of placeByRules.
type rulePlan struct {
	st     *step
	target []int32
	caps   []int
	room   []int
	hardOf []int
	weight []uint64 // the members' weights, draining ignored (1 at least)
	// order is the classes but 0, in the order they are placed: hard ones
	// first, fewest takers first; takers[k] are class k's members that may
	// be given its shards; pos[k] is class k's place in the order, the
	// classes without hard rules sharing the last (so, with class 0, they
	// rank by holding alone).
	order  []int32
	takers [][]int32
	pos    []int
	cur    int       // the position of the class being placed
	mine   [][]int32 // per member, the shards it keeps (ranked once ranked[m])
	placed [][]int32 // per member, the hard-ruled shards placed on it
	// noShift is 1 + the position of a class shift failed for.
	noShift int
	ranked  []bool
	given   []int32 // shards given up to make room, to be placed again
	sc      scorer
}

func (rp *rulePlan) orderClasses() {
	pl := rp.st.rules
	rp.takers = pl.takers // found once a step (strand): cordons and stuck marks do not change between rounds
	for k := 1; k < len(pl.classes); k++ {
		rp.order = append(rp.order, int32(k))
	}
	slices.SortFunc(rp.order, func(a, b int32) int {
		ca, cb := &pl.classes[a], &pl.classes[b]
		if ca.hard() != cb.hard() {
			if ca.hard() {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(len(rp.takers[a]), len(rp.takers[b])); c != 0 {
			return c
		}
		return cmp.Compare(ca.first, cb.first)
	})
	rp.pos = make([]int, len(pl.classes))
	last := len(rp.order)
	rp.pos[0] = last
	for p, k := range rp.order {
		rp.pos[k] = p
		if !pl.classes[k].hard() {
			rp.pos[k] = last
		}
	}
}

// placeClass places class k's pending shards, each on the taker with room
// that a prefer rule selects, else with the most room; a hard-ruled shard
// that finds no taker with room is forced on one.
func (rp *rulePlan) placeClass(k int32, pending []int32) {
	st := rp.st
	c := &st.rules.classes[k]
	h := takerHeap{st: st, c: c, room: rp.room, members: slices.Clone(rp.takers[k])}
	heap.Init(&h)
	for _, i := range pending {
		var m int32 = -1
		switch {
		case len(h.members) > 0 && rp.room[h.members[0]] > 0:
			m = h.members[0]
		case c.hard() && len(h.members) > 0:
			m = rp.forced(c, rp.takers[k])
		}
		if m < 0 {
			if c.hard() {
				st.unplaceable = append(st.unplaceable, i)
			}
			rp.target[i] = leave
			continue
		}
		rp.target[i] = m
		rp.room[m]--
		if c.hard() {
			rp.hardOf[m]++
			rp.placed[m] = append(rp.placed[m], i)
		}
		if m == h.members[0] {
			heap.Fix(&h, 0)
		} else {
			heap.Init(&h) // forced: as rare as it is linear
		}
	}
}

// rank orders member m's shards (mine[m]) by how much m should keep them:
// the hard-ruled ones of classes placed earlier first (fewer others may
// take them), then those m holds (shedding one costs a hand-off), then
// those a prefer rule gives m, then by rendezvous score, then shard order.
func (rp *rulePlan) rank(m int32) {
	st, list := rp.st, rp.mine[m]
	type ranked struct {
		i             int32
		pos           int
		firm, prefers bool
		score         uint64
	}
	rs := make([]ranked, len(list))
	for k, i := range list {
		rs[k] = ranked{i, rp.pos[st.rules.class[i]], st.holder[i] == m, st.rules.prefers(int(i), m),
			rp.sc.score(st.shards[i], st.ids[m])}
	}
	first := func(a, b bool) int {
		switch {
		case a == b:
			return 0
		case a:
			return -1
		}
		return 1
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		if c := first(a.firm, b.firm); c != 0 {
			return c
		}
		if c := first(a.prefers, b.prefers); c != 0 {
			return c
		}
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	for k := range rs {
		list[k] = rs[k].i
	}
	rp.ranked[m] = true
}

// canGive reports whether member m keeps a shard of a class placed after
// the current one, which it could give up to make room.
func (rp *rulePlan) canGive(m int32) bool {
	if len(rp.mine[m]) == 0 {
		return false
	}
	if !rp.ranked[m] {
		rp.rank(m)
	}
	list := rp.mine[m]
	return rp.pos[rp.st.rules.class[list[len(list)-1]]] > rp.cur
}

// give takes member m's last ranked shard from it, to be placed again.
func (rp *rulePlan) give(m int32) {
	list := rp.mine[m]
	i := list[len(list)-1]
	rp.mine[m] = list[:len(list)-1]
	rp.target[i] = -1
	rp.room[m]++
	if rp.st.rules.hardAt(int(i)) {
		rp.hardOf[m]--
	}
	rp.given = append(rp.given, i)
}

// forced picks, when no member that may take a hard-ruled shard has room,
// the one to take it anyway: one that does not drain, then one that can
// give up a shard placed later (canGive), then the one with the fewest
// shards per weight, then one a prefer rule selects; and makes that room.
func (rp *rulePlan) forced(c *ruleClass, takers []int32) int32 {
	st := rp.st
	best, bestGives := int32(-1), false
	better := func(m int32, gives bool) bool {
		if best < 0 {
			return true
		}
		if a, b := !st.draining[m], !st.draining[best]; a != b {
			return a
		}
		if gives != bestGives {
			return gives
		}
		// The fewest shards per weight after taking it, so that what hard
		// rules force is spread by weight whatever the quotas were.
		a := uint64(rp.caps[m]-rp.room[m]+1) * rp.weight[best]
		b := uint64(rp.caps[best]-rp.room[best]+1) * rp.weight[m]
		if a != b {
			return a < b
		}
		if c.prefer != nil && c.prefer[m] != c.prefer[best] {
			return c.prefer[m]
		}
		return tieBreak(st.ids[m], st.ids[best])
	}
	for _, m := range takers {
		if gives := rp.canGive(m); better(m, gives) {
			best, bestGives = m, gives
		}
	}
	if best >= 0 && bestGives {
		rp.give(best)
		return best
	}
	if m := rp.shift(c, takers); m >= 0 {
		return m
	}
	return best
}

// shift makes room on one of takers (those that do not drain, in order)
// by moving one of its hard-ruled shards of another class to a member of
// that class with room: one step of an augmenting path, so that the
// order classes are placed in does not strand a shard on the member only
// it could go to. It returns the member it made room on, or -1. Once it
// fails for a class it fails for the rest of it (rooms only shrink), so
// it is not tried again.
func (rp *rulePlan) shift(c *ruleClass, takers []int32) int32 {
	st := rp.st
	if rp.noShift == rp.cur+1 {
		return -1
	}
	roomy := map[int32]int32{}
	find := func(k int32) int32 {
		if m, ok := roomy[k]; ok && (m < 0 || rp.room[m] > 0) {
			return m
		}
		best := int32(-1)
		for _, m := range rp.takers[k] {
			if rp.room[m] > 0 && (best < 0 || rp.room[m] > rp.room[best]) {
				best = m
			}
		}
		roomy[k] = best
		return best
	}
	for _, m := range takers {
		if st.draining[m] {
			continue
		}
		for _, list := range []*[]int32{&rp.placed[m], &rp.mine[m]} {
			for at, j := range *list {
				k := st.rules.class[j]
				if cj := &st.rules.classes[k]; cj == c || !cj.hard() {
					continue
				}
				to := find(k)
				if to < 0 || to == m {
					continue
				}
				*list = slices.Delete(*list, at, at+1)
				rp.placed[to] = append(rp.placed[to], j)
				rp.target[j] = to
				rp.room[to]--
				rp.room[m]++
				rp.hardOf[m]--
				rp.hardOf[to]++
				return m
			}
		}
	}
	rp.noShift = rp.cur + 1
	return -1
}

// ruleWeights are the members' weights as the quotas use them, a
// draining member's counted as if it did not drain.
func (st *step) ruleWeights() []uint64 {
	ws := make([]uint64, len(st.members))
	for m, mem := range st.members {
		ws[m] = uint64(capacityOf(mem)) // capacityOf ignores draining
	}
	return ws
}

// tieBreak orders members by a hash of their IDs, then the IDs, so that
// ties do not always fall on the lexically first.
func tieBreak(a, b string) bool {
	ha, hb := xxhash.Sum64String(a), xxhash.Sum64String(b)
	if ha != hb {
		return ha > hb
	}
	return a < b
}

// strand finds, once a step, the members that may be given each class's
// shards (pl.takers) and returns how many shards are in the classes whose
// hard rules leave none. Such a shard is outside every quota (quotaFree):
// a member the rules allow that holds it (a cordoned or stuck one) keeps
// it, and none is placed.
func (pl *placement) strand(st *step) int {
	pl.takers = make([][]int32, len(pl.classes))
	n := 0
	for k := range pl.classes {
		c := &pl.classes[k]
		pl.takers[k] = st.takers(c)
		if c.hard() && len(pl.takers[k]) == 0 {
			n += c.size
		}
	}
	return n
}

// quotaFree reports whether shard i is outside the quotas (strand).
func (pl *placement) quotaFree(i int) bool {
	if pl == nil || pl.takers == nil {
		return false
	}
	k := pl.class[i]
	return pl.classes[k].hard() && len(pl.takers[k]) == 0
}

// allowedCounts is, per member, how many shards the hard rules allow it.
func (pl *placement) allowedCounts(w int) []int {
	out := make([]int, w)
	for k := range pl.classes {
		c := &pl.classes[k]
		for m := range out {
			if c.may == nil || c.may[m] {
				out[m] += c.size
			}
		}
	}
	return out
}

// placeable reports whether member m may be given shards: not stuck and
// not cordoned (a member on probation may: within its quota, but for a
// hard-ruled shard nobody else may take, see forced).
func (st *step) placeable(m int32) bool { return !st.stuck[m] && !st.cordoned[m] }

// takers are the members that may be given the class's shards.
func (st *step) takers(c *ruleClass) []int32 {
	var out []int32
	for m := range int32(len(st.members)) {
		if st.placeable(m) && (c.may == nil || c.may[m]) {
			out = append(out, m)
		}
	}
	return out
}

// takerHeap orders a class's takers with room first, then preferred, then
// by room, then the tie-break: its top is where the next shard goes.
type takerHeap struct {
	st      *step
	c       *ruleClass
	room    []int
	members []int32
}

func (h *takerHeap) Len() int { return len(h.members) }
func (h *takerHeap) Less(a, b int) bool {
	ma, mb := h.members[a], h.members[b]
	ra, rb := h.room[ma], h.room[mb]
	if (ra > 0) != (rb > 0) {
		return ra > 0
	}
	if p := h.c.prefer; p != nil && p[ma] != p[mb] {
		return p[ma]
	}
	if ra != rb {
		return ra > rb
	}
	return tieBreak(h.st.ids[ma], h.st.ids[mb])
}
func (h *takerHeap) Swap(a, b int) { h.members[a], h.members[b] = h.members[b], h.members[a] }
func (h *takerHeap) Push(x any)    { h.members = append(h.members, x.(int32)) }
func (h *takerHeap) Pop() any {
	x := h.members[len(h.members)-1]
	h.members = h.members[:len(h.members)-1]
	return x
}
