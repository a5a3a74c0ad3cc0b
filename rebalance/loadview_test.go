package rebalance

import (
	"math"
	"math/rand/v2"

	"github.com/shardlease/shardlease/shard"
)

// zipfRanks gives n shards loads by a Zipf law of exponent s over ranks
// (the k-th heaviest carries 1/k^s, in a random order), scaled to a mean
// of 1: shardbench's skewed-load scenario. Over 128 shards and 12 members
// the heaviest shard alone carries 2.8 times a member's mean, so the band
// cannot hold for every member (see loadView.pinned).
func zipfRanks(r *rand.Rand, ids []shard.ID, s float64) map[shard.ID]float64 {
	loads := make(map[shard.ID]float64, len(ids))
	var sum float64
	for k, at := range r.Perm(len(ids)) {
		loads[ids[at]] = math.Pow(float64(k+1), -s)
		sum += loads[ids[at]]
	}
	for id := range loads {
		loads[id] *= float64(len(ids)) / sum
	}
	return loads
}

// zipfDraws gives n shards loads drawn independently from a Zipf
// distribution of exponent s (1 + rand.Zipf over 0..999): heavy-tailed,
// but no single shard carries more than a member's mean.
func zipfDraws(r *rand.Rand, ids []shard.ID, s float64) map[shard.ID]float64 {
	z := rand.NewZipf(r, s, 1, 999)
	loads := make(map[shard.ID]float64, len(ids))
	for _, id := range ids {
		loads[id] = float64(1 + z.Uint64())
	}
	return loads
}

// loadView is the load per capacity of the members that take part in load
// balancing (neither cordoned nor draining, in the sims) as the holders
// say, recomputed from the state independently of Step.
type loadView struct {
	ratio  map[string]float64
	mean   float64 // over every eligible member
	adj    float64 // as the step's band: the load but pinned members' heaviest shards, per capacity of those not pinned
	pinned map[string]bool
	extra  map[string]float64 // a pinned member's load besides its heaviest shard, per capacity
}

func viewLoads(s State) loadView {
	v := loadView{ratio: map[string]float64{}, pinned: map[string]bool{}}
	capOf := map[string]float64{}
	heavy := map[string]float64{}
	for _, m := range s.Members {
		if m.Cordoned || m.Draining {
			continue
		}
		capOf[m.ID] = capacityOf(m)
		v.ratio[m.ID] = 0
	}
	var total, capacity float64
	for i, id := range s.Shards {
		h := s.Holders[i]
		if _, ok := capOf[h]; ok {
			v.ratio[h] += s.Loads[id]
			heavy[h] = max(heavy[h], s.Loads[id])
			total += s.Loads[id]
		}
	}
	for m, c := range capOf {
		capacity += c
		v.ratio[m] /= c
	}
	v.mean = total / capacity
	for {
		var t, c float64
		for m := range capOf {
			t += v.ratio[m] * capOf[m]
			if v.pinned[m] {
				t -= heavy[m]
			} else {
				c += capOf[m]
			}
		}
		v.adj = t / c
		more := false
		for m := range capOf {
			if !v.pinned[m] && heavy[m]/capOf[m] > v.adj*1.10 {
				v.pinned[m], more = true, true
			}
		}
		if !more {
			v.extra = map[string]float64{}
			for m := range v.pinned {
				v.extra[m] = v.ratio[m] - heavy[m]/capOf[m]
			}
			return v
		}
	}
}

// worst is the highest ratio ÷ mean, and the highest and lowest ratio ÷
// adjusted mean of the members not pinned; a pinned member counts in the
// highest as the step sees it, at the mean plus what it holds besides its
// heaviest shard (inside the band once that is moved off).
func (v loadView) worst() (maxRaw, hiAdj, loAdj float64) {
	loAdj = math.Inf(1)
	for m, r := range v.ratio {
		maxRaw = max(maxRaw, r/v.mean)
		if v.pinned[m] {
			hiAdj = max(hiAdj, 1+v.extra[m]/v.adj)
		} else {
			hiAdj, loAdj = max(hiAdj, r/v.adj), min(loAdj, r/v.adj)
		}
	}
	return
}
