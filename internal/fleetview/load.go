package fleetview

import (
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// Load is the fleet's load as its members carry it in their records
// (shard.Member.Load): what a load-balancing assignor balances, before
// static weights, which only the workers' configuration knows.
type Load struct {
	// Mean is the fleet's load per unit of capacity (member weight).
	Mean float64 `json:"mean"`
	// Tolerance is the band around Mean every worker is to be kept in, as
	// a fraction: the viewer's knowledge of the workers' configuration
	// (Input.Tolerance), or rebalance.DefaultTolerance.
	Tolerance float64 `json:"tolerance"`
	// MinRatio and MaxRatio are the lowest and highest Worker.LoadRatio of
	// the live workers with capacity; InBand whether both are within
	// 1 ± Tolerance.
	MinRatio float64 `json:"min_ratio"`
	MaxRatio float64 `json:"max_ratio"`
	InBand   bool    `json:"in_band"`
	// Measured counts the owned shards with a figure; the others count as
	// the mean of those in every sum.
	Measured int `json:"shards_measured"`
}

// buildLoad fills the load figures of f's workers and shards from s and
// returns the fleet's, or nil when no member carries any load (a fleet
// balancing counts).
func buildLoad(f *Fleet, s shard.Snapshot, tolerance float64) *Load {
	loads := s.ShardLoads()
	if len(loads) == 0 {
		return nil
	}
	if tolerance <= 0 {
		tolerance = rebalance.DefaultTolerance
	}
	for i := range f.Shards {
		if v, ok := loads[f.Shards[i].ID]; ok && f.Shards[i].State == ShardOwned {
			f.Shards[i].Load = &v
		}
	}
	members := s.MemberLoads(loads)
	mean, ok := shard.LoadMean(members)
	l := &Load{Mean: mean, Tolerance: tolerance, Measured: len(loads)}
	first := true
	index := make(map[string]int, len(f.Workers))
	for i := range f.Workers {
		index[f.Workers[i].ID] = i
	}
	for _, m := range members {
		w, found := index[m.Member]
		if !found {
			continue
		}
		load := m.Load
		f.Workers[w].Load = &load
		if m.Capacity <= 0 || !ok {
			continue
		}
		r := m.Load / float64(m.Capacity) / mean
		f.Workers[w].LoadRatio = &r
		if first {
			l.MinRatio, l.MaxRatio, first = r, r, false
		}
		l.MinRatio, l.MaxRatio = min(l.MinRatio, r), max(l.MaxRatio, r)
	}
	l.InBand = !first && l.MaxRatio <= 1+tolerance && l.MinRatio >= 1-tolerance
	return l
}
