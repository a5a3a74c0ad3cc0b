package rebalance

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// moves plans at most budget load moves, in the order they should start,
// and sets each one's target and every eligible member's band mark
// (st.band); it also returns when a move that was wanted but held back (by
// Patience or MinResidence) may become possible: zero when nothing was held
// back, or when a move is planned (its hand-off wakes the next step anyway).
//
// The band is around the mean load per capacity of the eligible members.
// A member whose heaviest shard alone puts it above the band is pinned:
// the band cannot hold for it, so its load and capacity are left out of
// the mean (see pin), and its ratio counts as the mean plus the load of
// its other shards per capacity, so those are moved off where they fit;
// the heaviest shard is never moved for load (that would only pin
// another).
//
// A member outside the band is marked (Assignment.OutOfBand keeps since
// when); it is corrected only once it has been outside for Patience, so a
// fluctuation that comes back by itself moves nothing. Nothing moves while
// every member is inside the band, however uneven the loads inside it are.
// A member corrected is brought to the inner band (half the tolerance),
// not to the edge: that hysteresis keeps it from crossing the edge again
// on the next fluctuation.
//
// Each move serves the corrected member furthest outside the inner band:
// if it is above, one of its shards goes to the member with the lowest
// ratio that can take one (then the next lowest); if below, it takes one
// from the member with the highest ratio that can give one. Among the
// source's shards that may move (held and in its key, not moved in this
// step, resident for MinResidence) and whose move keeps the destination at
// most at the band's top and the source at least at its bottom, never
// lifts the destination above the source's old ratio nor drops the source
// below the destination's, and narrows the gap between them by more than
// MinGain times the mean, the lightest that covers the need is moved, or,
// if none does, the heaviest: the fewest moves, then the lightest. When no
// shard qualifies for any corrected member, planning ends.
func (lp *loadPlan) moves(budget int) ([]int32, time.Time) {
	st := lp.st
	pol := st.p.Load
	w := len(st.members)
	heavy := lp.heaviest()
	byMember := make([][]int32, w) // shards an eligible member holds in its key
	for i, t := range st.target {
		if t >= 0 && lp.el[t] && st.holder[i] == t && st.flags[i]&inHolderKey != 0 {
			byMember[t] = append(byMember[t], int32(i))
		}
	}
	st.band = make([]time.Time, w)
	pinned, mean := lp.pin(heavy, pol.Tolerance)
	if math.IsNaN(mean) || mean <= 0 {
		return nil, time.Time{}
	}
	lp.mean = mean
	rs := make([]float64, w)
	ratios := func() { lp.ratios(rs, heavy, pinned) }
	hi, lo := mean*(1+pol.Tolerance), mean*(1-pol.Tolerance)

	// The marks, and who is corrected.
	var wake time.Time
	later := func(at time.Time) {
		if wake.IsZero() || at.Before(wake) {
			wake = at
		}
	}
	ratios()
	var fix []int
	for m, ok := range lp.el {
		if !ok || (rs[m] <= hi && rs[m] >= lo) {
			continue
		}
		since := st.keys[m].OutOfBand
		if since.IsZero() || since.After(st.now) {
			since = st.now
		}
		st.band[m] = since
		if end := since.Add(pol.Patience); end.After(st.now) {
			later(end)
		} else {
			fix = append(fix, m)
		}
	}
	if len(fix) == 0 {
		return nil, wake
	}

	mv := &mover{lp: lp, byMember: byMember, pinned: pinned, heavy: heavy, rs: rs, ratios: ratios, later: later, above: make([]bool, w)}
	mv.center(mean)
	for _, m := range fix {
		mv.above[m] = rs[m] > hi
	}
	for m, ok := range lp.el {
		if ok {
			mv.order = append(mv.order, m)
		}
	}
	for len(mv.planned) < budget {
		i, from, to, lump := mv.find(fix)
		if i >= 0 {
			mv.apply(i, from, to)
			continue
		}
		if lump.i >= 0 && mv.lump(lump, budget) {
			continue
		}
		// An exchange only alone, one a step: its two shards are free at
		// once before they are placed, and placement (lowest ratio after
		// placing, heaviest first) undoes two exchanges that share a
		// member, or an exchange beside other moves, by putting every
		// shard back where it was — a cycle the rule property test found.
		if len(mv.planned) == 0 && budget >= 2 {
			mv.swap(fix)
		}
		break
	}
	if len(mv.planned) > 0 {
		wake = time.Time{}
	}
	return mv.planned, wake
}

// mover is one step's planning of load moves (see moves).
type mover struct {
	lp       *loadPlan
	byMember [][]int32
	pinned   []bool
	heavy    []int32
	rs       []float64 // ratios, as of the last ratios()
	ratios   func()
	order    []int // eligible members, lowest ratio first after find sorts them
	planned  []int32

	innerHi, innerLo, hi, lo float64
	farHi, farLo             float64 // beyond these MinResidence yields (center)
	later                    func(time.Time)
	above                    []bool // a corrected member was above the band (else below)
}

// serves reports whether corrected member m still needs moves, and
// whether it gives (it was above the band and is above the inner band) or
// takes (below both). A member is corrected towards the inner band from
// the side it left the band on, never past it: a member pushed from
// below to inside the band is not then made to give back.
func (mv *mover) serves(m int) (gives, ok bool) {
	if mv.above[m] {
		return true, mv.rs[m] > mv.innerHi
	}
	return false, mv.rs[m] < mv.innerLo
}

// center sets the band around mean, its inner band, and the far marks:
// a corrected member beyond the band by half the tolerance again (1.15 ×
// the mean with the default ±10 %) is served with shards still in their
// MinResidence too, once they have stayed Patience. Residence keeps noise from moving a shard back and
// forth; no noise the band is meant to ride out puts a member that far
// out, while a first wave planned on figures still catching up with a
// change can (a run left a worker at 1.2 × for a minute, its only
// movable shards the ones that had just arrived). A shard moved off such
// a member cannot come back on the noise: a move never lifts its
// receiver above the band.
func (mv *mover) center(mean float64) {
	tol := mv.lp.st.p.Load.Tolerance
	mv.lp.mean = mean
	mv.hi, mv.lo = mean*(1+tol), mean*(1-tol)
	mv.innerHi, mv.innerLo = mean*(1+tol/2), mean*(1-tol/2)
	mv.farHi, mv.farLo = mean*(1+1.5*tol), mean*(1-1.5*tol)
}

// far reports whether member m is far outside the band (center), so that
// residence yields to its correction and a swap may take any partner.
func (mv *mover) far(m int) bool { return mv.rs[m] > mv.farHi || mv.rs[m] < mv.farLo }

// candidate is a move that find or pick found: shard i from a member to
// another, or i < 0 for none.
type candidate struct{ i, from, to int32 }

// find returns the move that serves the corrected member of fix furthest
// outside the inner band (its partners tried in order, lowest ratio first
// when it gives, highest first when it takes), or i < 0 and the first
// lump found (see pick) when no shard qualifies for any.
func (mv *mover) find(fix []int) (i int32, from, to int, lump candidate) {
	rs := mv.rs
	mv.ratios()
	slices.SortFunc(mv.order, func(x, y int) int {
		if c := cmp.Compare(rs[x], rs[y]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	dev := func(m int) float64 { return max(rs[m]-mv.innerHi, mv.innerLo-rs[m]) }
	slices.SortFunc(fix, func(x, y int) int {
		if c := cmp.Compare(dev(y), dev(x)); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	lump = candidate{-1, -1, -1}
	for _, x := range fix {
		up, ok := mv.serves(x)
		if !ok {
			continue
		}
		need := (mv.innerLo - rs[x]) * mv.lp.cap[x]
		if up {
			need = (rs[x] - mv.innerHi) * mv.lp.cap[x]
		}
		far := mv.far(x)          // then served with shards in residence too (center)
		for k := range mv.order { // the partners: lowest first when x gives, highest first when it takes
			a, b := x, mv.order[k]
			if !up {
				a, b = mv.order[len(mv.order)-1-k], x
			}
			if rs[b] >= rs[a] {
				break
			}
			if mv.pinned[b] {
				continue // a pinned member is given nothing: it has its lump
			}
			i, l, held := mv.lp.pick(mv.byMember[a], a, b, rs[a], rs[b], need, mv.pinned[a], mv.heavy[a], far)
			if !held.IsZero() {
				mv.later(held)
			}
			if i >= 0 {
				return i, a, b, lump
			}
			if l >= 0 && lump.i < 0 {
				lump = candidate{l, int32(a), int32(b)}
			}
		}
	}
	return -1, -1, -1, lump
}

// apply plans shard i's move from one member to another.
func (mv *mover) apply(i int32, from, to int) {
	st, l := mv.lp.st, mv.lp.st.load[i]
	mv.lp.sum[from] -= l
	mv.lp.sum[to] += l
	st.target[i] = int32(to)
	st.flags[i] |= loadMoved
	mv.planned = append(mv.planned, i)
}

// lump tries a move that takes a lump (a shard too heavy to move without
// pushing its receiver above the band, or its giver below) and then the
// moves that bring the member it pushed out back inside, within budget.
// It keeps them all if that member ends inside the band, and undoes them
// otherwise: a lump is moved only when the moves that follow it are
// planned in the same step, so the fleet never waits, or churns, with a
// member the step itself pushed out.
func (mv *mover) lump(c candidate, budget int) bool {
	mark := len(mv.planned)
	mv.apply(c.i, int(c.from), int(c.to))
	// A lump that alone puts its receiver above the band pins it (see pin):
	// then the receiver's other shards are what must move off.
	pins := !mv.pinned[c.to] && mv.lp.st.load[c.i]/mv.lp.cap[c.to] > mv.hi
	mean, heavy := mv.lp.mean, mv.heavy[c.to]
	if pins {
		mv.pinned[c.to], mv.heavy[c.to] = true, c.i
		if m := mv.lp.meanOf(mv.pinned, mv.heavy); m > 0 {
			mv.center(m)
		}
	}
	mv.ratios()
	out := int(c.to)
	if mv.rs[c.from] < mv.lo {
		out = int(c.from)
	}
	was := mv.above[out]
	mv.above[out] = out == int(c.to)
	defer func() {
		if len(mv.planned) == mark { // undone
			mv.above[out] = was
		}
	}()
	for len(mv.planned) < budget && (mv.rs[out] > mv.innerHi || mv.rs[out] < mv.innerLo) {
		i, from, to, _ := mv.find([]int{out})
		if i < 0 {
			break
		}
		mv.apply(i, from, to)
		mv.ratios()
	}
	if mv.rs[out] <= mv.hi && mv.rs[out] >= mv.lo {
		return true
	}
	if pins {
		mv.pinned[c.to], mv.heavy[c.to] = false, heavy
		mv.center(mean)
	}
	st := mv.lp.st
	for _, i := range mv.planned[mark:] { // undo, last first
		l := st.load[i]
		mv.lp.sum[st.target[i]] -= l
		mv.lp.sum[st.holder[i]] += l
		st.target[i] = st.holder[i]
		st.flags[i] &^= loadMoved
	}
	mv.planned = mv.planned[:mark]
	mv.ratios()
	return false
}

// resident reports whether shard i, on member m, arrived less than
// MinResidence ago, and when its residence ends. With far (mover.center)
// the residence is cut to Patience: a shard that arrived a moment ago,
// in the very decision being read back, does not move again at once
// (which would also break the written decision's being a fixed point).
func (lp *loadPlan) resident(i int32, m int, far bool) (time.Time, bool) {
	st := lp.st
	at, ok := st.keys[m].Arrived[st.shards[i]]
	if !ok {
		return time.Time{}, false
	}
	if at.After(st.now) {
		at = st.now
	}
	stay := st.p.Load.MinResidence
	if far {
		stay = min(stay, st.p.Load.Patience)
	}
	end := at.Add(stay)
	return end, end.After(st.now)
}

// pick returns the shard of shards (member a's, with ratio ra) that the
// placement rules let member b (ratio rb) own, to move to it as moves says, or -1 and the earliest end of a
// residence that held a qualifying shard back (zero when none did).
// pinned says that a is pinned by its shard heavy, which never moves;
// far that the member served is far outside the band, so residence
// yields (mover.center).
func (lp *loadPlan) pick(shards []int32, a, b int, ra, rb, need float64, pinned bool, heavy int32, far bool) (best, lump int32, wake time.Time) {
	st, pol := lp.st, lp.st.p.Load
	mean := lp.mean
	hi, lo, gain := mean*(1+pol.Tolerance), mean*(1-pol.Tolerance), pol.MinGain*mean
	best, lump = -1, -1
	var bestLoad, lumpGap float64
	for _, i := range shards {
		l := st.load[i]
		if st.flags[i]&loadMoved != 0 || (pinned && i == heavy) || !st.rules.allows(int(i), int32(b)) {
			continue
		}
		ra2, rb2 := ra-l/lp.cap[a], rb+l/lp.cap[b]
		narrows := (ra - rb) - math.Abs(ra2-rb2)
		if rb2 > ra || ra2 < rb || narrows <= 0 {
			continue // it would widen the spread, or not narrow the gap
		}
		if end, stays := lp.resident(i, a, far); stays {
			if wake.IsZero() || end.Before(wake) {
				wake = end
			}
			continue
		}
		if rb2 > hi || ra2 < lo {
			if gap := math.Abs(ra2 - rb2); lump < 0 || gap < lumpGap {
				lump, lumpGap = i, gap
			}
			continue
		}
		if narrows <= gain {
			continue
		}
		covers, bestCovers := l >= need, best >= 0 && bestLoad >= need
		switch {
		case best < 0,
			covers && !bestCovers,
			covers && bestCovers && l < bestLoad,
			!covers && !bestCovers && l > bestLoad:
			best, bestLoad = i, l
		}
	}
	return best, lump, wake
}

// meanOf is the band's centre: the eligible members' load but the pinned
// members' heaviest shards, per capacity of the members not pinned (NaN
// when there is none). A pinned member's other shards count: they are to
// move off to the others.
func (lp *loadPlan) meanOf(pinned []bool, heavy []int32) float64 {
	var load, capacity float64
	for m, ok := range lp.el {
		if !ok {
			continue
		}
		load += lp.sum[m]
		if pinned[m] {
			load -= lp.st.load[heavy[m]]
		} else {
			capacity += lp.cap[m]
		}
	}
	if capacity == 0 {
		return math.NaN()
	}
	return load / capacity
}

// pin returns which eligible members are pinned by their heaviest shard
// and the mean load per capacity of the others (NaN when every eligible
// member is pinned or there is no capacity). A member is pinned when its
// heaviest shard alone puts it above the band around the mean of the
// members not pinned; pinning one lowers that mean, so it repeats until
// nobody more is pinned (at most once per member). What a pinned member
// holds besides its heaviest shard counts in the mean (see meanOf): it is
// to move off, as single moves where it fits and as a lump (which may pin
// its receiver in turn) where it does not.
// heaviest returns each eligible member's heaviest targeted shard, or -1.
func (lp *loadPlan) heaviest() []int32 {
	st := lp.st
	heavy := make([]int32, len(st.members))
	for m := range heavy {
		heavy[m] = -1
	}
	for i, t := range st.target {
		if t >= 0 && lp.el[t] {
			if h := heavy[t]; h < 0 || st.load[i] > st.load[h] {
				heavy[t] = int32(i)
			}
		}
	}
	return heavy
}

// ratios sets rs to each eligible member's load per capacity as the band
// judges it: a pinned member counts as the mean plus its other shards'
// load per capacity (lp.mean must be set).
func (lp *loadPlan) ratios(rs []float64, heavy []int32, pinned []bool) {
	for m, ok := range lp.el {
		if ok {
			rs[m] = lp.sum[m] / lp.cap[m]
			if pinned[m] {
				rs[m] = (lp.sum[m]-lp.st.load[heavy[m]])/lp.cap[m] + lp.mean
			}
		}
	}
}

// band is the load band as this step judges the targets now (lp.sum
// summed over them): its centre, each eligible member's ratio to it, and
// the members pinned above it by one shard.
func (lp *loadPlan) band() *Band {
	st := lp.st
	heavy := lp.heaviest()
	pinned, mean := lp.pin(heavy, st.p.Load.Tolerance)
	if math.IsNaN(mean) || mean <= 0 {
		return nil
	}
	saved := lp.mean
	lp.mean = mean
	defer func() { lp.mean = saved }()
	rs := make([]float64, len(st.members))
	lp.ratios(rs, heavy, pinned)
	b := &Band{Mean: mean, Tolerance: st.p.Load.Tolerance, Ratio: map[string]float64{}}
	for m, ok := range lp.el {
		if ok {
			b.Ratio[st.ids[m]] = rs[m] / mean
			if pinned[m] {
				b.Pinned = append(b.Pinned, st.ids[m])
			}
		}
	}
	return b
}

func (lp *loadPlan) pin(heavy []int32, tol float64) ([]bool, float64) {
	pinned := make([]bool, len(lp.el))
	for {
		mean := lp.meanOf(pinned, heavy)
		if math.IsNaN(mean) {
			return pinned, mean
		}
		more := false
		for m, ok := range lp.el {
			if ok && !pinned[m] && heavy[m] >= 0 && lp.st.load[heavy[m]]/lp.cap[m] > mean*(1+tol) {
				pinned[m], more = true, true
			}
		}
		if !more {
			return pinned, mean
		}
	}
}
