package rebalance

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// maxWeight caps a member's weight so that the sum of weights and the
// products N·w fit the 64- and 128-bit arithmetic below on every platform.
// Real weights are small; a larger one is a typo, and clamping it keeps the
// fleet planning instead of failing.
const maxWeight uint64 = 1 << 32

// effectiveWeights returns each member's weight as the quotas use it: ≤ 0
// counts as 1, above maxWeight as maxWeight, and a draining member as 0 —
// unless every member drains, in which case draining is ignored, because the
// shards must go somewhere.
func effectiveWeights(ms []Member) []uint64 {
	allDrain := true
	for _, m := range ms {
		allDrain = allDrain && m.Draining
	}
	ws := make([]uint64, len(ms))
	for i, m := range ms {
		switch {
		case m.Draining && !allDrain:
			ws[i] = 0
		case m.Weight <= 0:
			ws[i] = 1
		case uint64(m.Weight) > maxWeight:
			ws[i] = maxWeight
		default:
			ws[i] = uint64(m.Weight)
		}
	}
	return ws
}

// capacities splits n shards among members by weight with the
// largest-remainder method: each member gets ⌊n·w/Σw⌋, and the R shards left
// over go, one each, to members whose share has a fractional part, so every
// quota is the floor or the ceiling of its share and the quotas sum to n.
//
// Which members get the R extra slots decides how much moves. A member that
// already owns more than its floor would have to release a shard without
// one, so such members come first; from a converged assignment that makes a
// leave move only the leaver's shards and a join move only what the joiner
// receives, and it makes an applied plan a fixed point. Then the larger
// fractional part (the fairer choice), then a hash of the member ID (so that
// the extras on a fresh fleet do not always land on the lexically first
// workers), then the ID itself.
//
// ids are the members' IDs and owned the number of shards each currently
// holds; all slices are indexed alike and ws must have a positive sum.
func capacities(n int, ids []string, ws []uint64, owned []int) []int {
	var sum uint64
	for _, w := range ws {
		sum += w // ≤ len(ws)·2^32: cannot overflow
	}
	base := make([]int, len(ws))
	rem := make([]uint64, len(ws))
	left := n
	for i, w := range ws {
		// n·w/sum < 2^64 because w ≤ sum, so Div64 cannot panic.
		hi, lo := bits.Mul64(uint64(n), w)
		q, r := bits.Div64(hi, lo, sum)
		base[i], rem[i] = int(q), r
		left -= int(q)
	}
	if left == 0 {
		return base
	}
	// Exactly the members with rem > 0 may round up, and there are more of
	// them than left (Σrem = left·sum and each rem < sum), so the slots
	// always run out first.
	type cand struct {
		i     int
		wants bool
		rem   uint64
		tie   uint64
	}
	cands := make([]cand, 0, len(ws))
	for i := range ws {
		if rem[i] > 0 {
			cands = append(cands, cand{i, owned[i] > base[i], rem[i], xxhash.Sum64String(ids[i])})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.wants != b.wants {
			if a.wants {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.rem, a.rem); c != 0 {
			return c
		}
		if c := cmp.Compare(b.tie, a.tie); c != 0 {
			return c
		}
		return cmp.Compare(ids[a.i], ids[b.i])
	})
	for _, c := range cands[:left] {
		base[c.i]++
	}
	return base
}

// zonedCapacities is capacities for members in zones (zones[i] is member
// i's; "" is a zone too): n is split among the zones by the sum of their
// members' weights, each zone counting the shards its members own for the
// rounding slots, and each zone's quota among its members as capacities
// splits it. So each zone's quota is the floor or the ceiling of its
// share, and within a zone each member's is of its share of the zone's.
// With one zone it is capacities.
func zonedCapacities(n int, ids, zones []string, ws []uint64, owned []int) []int {
	index := map[string]int{}
	var names []string
	for _, z := range zones {
		if _, ok := index[z]; !ok {
			index[z] = len(names)
			names = append(names, z)
		}
	}
	if len(names) <= 1 {
		return capacities(n, ids, ws, owned)
	}
	zw, zo := make([]uint64, len(names)), make([]int, len(names))
	in := make([][]int, len(names))
	for i, z := range zones {
		k := index[z]
		zw[k] += ws[i]
		zo[k] += owned[i]
		in[k] = append(in[k], i)
	}
	caps := make([]int, len(ws))
	for k, q := range capacities(n, names, zw, zo) {
		if q == 0 {
			continue // also every zone whose weights are all 0 (draining)
		}
		sub := in[k]
		sids, sws, sown := make([]string, len(sub)), make([]uint64, len(sub)), make([]int, len(sub))
		for j, i := range sub {
			sids[j], sws[j], sown[j] = ids[i], ws[i], owned[i]
		}
		for j, c := range capacities(q, sids, sws, sown) {
			caps[sub[j]] = c
		}
	}
	return caps
}
