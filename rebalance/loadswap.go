package rebalance

import "math"

// swapPartners bounds how many partners a swap is looked for with, the
// members with the lowest ratios when the corrected member gives (the
// highest when it takes): the search costs the product of two members'
// shards per partner, and more partners find more exchanges that only
// shuffle noise (eight put the step-alone simulation's draws over 2 load
// moves a minute). A member far outside the band (mover.center) is
// offered every partner: four missed the one exchange that would do in a
// skewed-load run, the fifth lowest member's shard.
const swapPartners = 4

// swap plans an exchange for the first corrected member of fix (sorted by
// find) for which one qualifies, and reports whether it did: a shard s of
// the member with the higher ratio (a) for a lighter shard t of a partner
// with a lower one (b). To the loads it is one move of l(s) − l(t) from a
// to b, held to every rule of a single move (pick): b at most at the
// band's top, a at least at its bottom, the spread not widened, the gap
// narrowed by more than MinGain × the mean, neither shard inside its
// residence nor a pinned member's heaviest. It serves the lumpy loads a
// single move cannot: a member over the band whose every shard is too
// heavy for anyone's room. Among qualifying exchanges the one that
// leaves the pair closest together is chosen, then the lighter. It costs
// two hand-offs; the caller checks the budget.
func (mv *mover) swap(fix []int) bool {
	rs, lp := mv.rs, mv.lp
	gain := lp.st.p.Load.MinGain * lp.mean
	for _, x := range fix {
		up, ok := mv.serves(x)
		if !ok {
			continue
		}
		// Far outside, x's own shard may be one in residence; the partner's
		// keeps its whole residence.
		far := mv.far(x)
		best := struct {
			s, t  int32
			a, b  int
			gap   float64
			moved float64
		}{s: -1}
		partners := swapPartners
		if far {
			partners = len(mv.order)
		}
		for k := range min(partners, len(mv.order)) {
			a, b := x, mv.order[k]
			if !up {
				a, b = mv.order[len(mv.order)-1-k], x
			}
			if rs[b] >= rs[a] || mv.pinned[b] || mv.pinned[a] {
				break
			}
			for _, s := range mv.byMember[a] {
				if !mv.movable(s, a, far && a == x) || !lp.st.rules.allows(int(s), int32(b)) {
					continue
				}
				for _, t := range mv.byMember[b] {
					d := lp.st.load[s] - lp.st.load[t]
					if d <= 0 || !mv.movable(t, b, far && b == x) || !lp.st.rules.allows(int(t), int32(a)) {
						continue
					}
					ra2, rb2 := rs[a]-d/lp.cap[a], rs[b]+d/lp.cap[b]
					gap := math.Abs(ra2 - rb2)
					if rb2 > mv.hi || ra2 < mv.lo || rb2 > rs[a] || ra2 < rs[b] || (rs[a]-rs[b])-gap <= gain {
						continue
					}
					if best.s < 0 || gap < best.gap || (gap == best.gap && d < best.moved) {
						best.s, best.t, best.a, best.b, best.gap, best.moved = s, t, a, b, gap, d
					}
				}
			}
		}
		if best.s >= 0 {
			mv.apply(best.s, best.a, best.b)
			mv.apply(best.t, best.b, best.a)
			return true
		}
	}
	return false
}

// movable reports whether member m's shard i may move for load now: not
// moved in this step, not its lump if m is pinned, past its residence (cut
// to Patience with far, as in pick). A residence that holds it back sets
// the step's wake-up to its end, so the exchange is looked for again then
// rather than at the next change of the fleet.
func (mv *mover) movable(i int32, m int, far bool) bool {
	if mv.lp.st.flags[i]&loadMoved != 0 || (mv.pinned[m] && i == mv.heavy[m]) {
		return false
	}
	end, stays := mv.lp.resident(i, m, far)
	if stays {
		mv.later(end)
	}
	return !stays
}
