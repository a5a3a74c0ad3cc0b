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
// the band cannot hold for it, so its heaviest shard and its capacity are
// left out of the mean (repeatedly, as the mean falls), and its ratio
// counts as the mean plus the load of its other shards per capacity; the
// heaviest shard is never moved for load (that would only pin another).
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
	heavy := make([]int32, w) // each eligible member's heaviest shard, or -1
	for m := range heavy {
		heavy[m] = -1
	}
	byMember := make([][]int32, w) // shards an eligible member holds in its key
	for i, t := range st.target {
		if t < 0 || !lp.el[t] {
			continue
		}
		if h := heavy[t]; h < 0 || st.load[i] > st.load[h] {
			heavy[t] = int32(i)
		}
		if st.holder[i] == t && st.flags[i]&inHolderKey != 0 {
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
	ratios := func() {
		for m, ok := range lp.el {
			if ok {
				rs[m] = lp.sum[m] / lp.cap[m]
				if pinned[m] {
					rs[m] = (lp.sum[m]-st.load[heavy[m]])/lp.cap[m] + mean
				}
			}
		}
	}
	hi, lo := mean*(1+pol.Tolerance), mean*(1-pol.Tolerance)
	innerHi, innerLo := mean*(1+pol.Tolerance/2), mean*(1-pol.Tolerance/2)

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

	order := make([]int, 0, w) // eligible members, lowest ratio first
	for m, ok := range lp.el {
		if ok {
			order = append(order, m)
		}
	}
	var planned []int32
	for len(planned) < budget {
		ratios()
		slices.SortFunc(order, func(x, y int) int {
			if c := cmp.Compare(rs[x], rs[y]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
		dev := func(m int) float64 { return max(rs[m]-innerHi, innerLo-rs[m]) }
		slices.SortFunc(fix, func(x, y int) int {
			if c := cmp.Compare(dev(y), dev(x)); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
		best, from, to := int32(-1), -1, -1
	search:
		for _, x := range fix {
			up := rs[x] > innerHi // x gives; else it takes, if below the inner band
			if !up && rs[x] >= innerLo {
				continue
			}
			need := (innerLo - rs[x]) * lp.cap[x]
			if up {
				need = (rs[x] - innerHi) * lp.cap[x]
			}
			for k := range order { // the partners: lowest first when x gives, highest first when it takes
				a, b := x, order[k]
				if !up {
					a, b = order[len(order)-1-k], x
				}
				if rs[b] >= rs[a] {
					break
				}
				i, held := lp.pick(byMember[a], a, b, rs[a], rs[b], need, pinned[a], heavy[a])
				if !held.IsZero() {
					later(held)
				}
				if i >= 0 {
					best, from, to = i, a, b
					break search
				}
			}
		}
		if best < 0 {
			break
		}
		l := st.load[best]
		lp.sum[from] -= l
		lp.sum[to] += l
		st.target[best] = int32(to)
		st.flags[best] |= loadMoved
		planned = append(planned, best)
	}
	if len(planned) > 0 {
		wake = time.Time{}
	}
	return planned, wake
}

// pick returns the shard of shards (member a's, with ratio ra) to move to
// member b (ratio rb) as moves says, or -1 and the earliest end of a
// residence that held a qualifying shard back (zero when none did).
// pinned says that a is pinned by its shard heavy, which never moves.
func (lp *loadPlan) pick(shards []int32, a, b int, ra, rb, need float64, pinned bool, heavy int32) (int32, time.Time) {
	st, pol := lp.st, lp.st.p.Load
	mean := lp.mean
	hi, lo, gain := mean*(1+pol.Tolerance), mean*(1-pol.Tolerance), pol.MinGain*mean
	best := int32(-1)
	var bestLoad float64
	var wake time.Time
	for _, i := range shards {
		l := st.load[i]
		if st.flags[i]&loadMoved != 0 || (pinned && i == heavy) {
			continue
		}
		ra2, rb2 := ra-l/lp.cap[a], rb+l/lp.cap[b]
		if rb2 > hi || ra2 < lo || rb2 > ra || ra2 < rb || (ra-rb)-math.Abs(ra2-rb2) <= gain {
			continue
		}
		if at, ok := st.keys[a].Arrived[st.shards[i]]; ok {
			if at.After(st.now) {
				at = st.now
			}
			if end := at.Add(pol.MinResidence); end.After(st.now) {
				if wake.IsZero() || end.Before(wake) {
					wake = end
				}
				continue
			}
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
	return best, wake
}

// pin returns which eligible members are pinned by their heaviest shard
// and the mean load per capacity of the others (NaN when every eligible
// member is pinned or there is no capacity). A member is pinned when its
// heaviest shard alone puts it above the band around the mean of the
// members not pinned; pinning one lowers that mean, so it repeats until
// nobody more is pinned (at most once per member).
func (lp *loadPlan) pin(heavy []int32, tol float64) ([]bool, float64) {
	pinned := make([]bool, len(lp.el))
	for {
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
			return pinned, math.NaN()
		}
		mean := load / capacity
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
