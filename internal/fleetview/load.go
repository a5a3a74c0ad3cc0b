package fleetview

import (
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// Load is the fleet's load as the assignor's step judges it (its Band,
// from assignor.Plan on the same listing), with the figures the members
// carry in their records (shard.Member.Load).
type Load struct {
	// Mean is the band's centre: the load per unit of capacity of the
	// members the step balances, less those pinned above the band by one
	// heavy shard.
	Mean float64 `json:"mean"`
	// Tolerance is the band around Mean every worker is kept in, as a
	// fraction: the viewer's knowledge of the fleet's policy
	// (Input.Tolerance), or rebalance.DefaultTolerance.
	Tolerance float64 `json:"tolerance"`
	// MinRatio and MaxRatio are the lowest and highest Worker.LoadRatio;
	// InBand whether both are within 1 ± Tolerance.
	MinRatio float64 `json:"min_ratio"`
	MaxRatio float64 `json:"max_ratio"`
	InBand   bool    `json:"in_band"`
	// Pinned are the workers whose heaviest shard alone puts them above
	// the band (the step moves their other shards, never that one).
	Pinned []string `json:"pinned,omitempty"`
	// Measured counts the owned shards with a figure; the others count as
	// the mean of those in the step's sums.
	Measured int `json:"shards_measured"`
}

// buildLoad fills the load figures of f's workers and shards — each
// shard's as its holder reports it, each worker's as the sum of its
// shards' and its ratio as the step's band says — and returns the
// fleet's, or nil when no member carries any load (a fleet balancing
// counts) or the step judged no band.
func buildLoad(f *Fleet, loads map[shard.ID]float64, band *rebalance.Band) *Load {
	if len(loads) == 0 || band == nil {
		return nil
	}
	index := make(map[string]int, len(f.Workers))
	for i := range f.Workers {
		index[f.Workers[i].ID] = i
	}
	for i := range f.Shards {
		sh := &f.Shards[i]
		v, ok := loads[sh.ID]
		if !ok || sh.State != ShardOwned {
			continue
		}
		sh.Load = &v
		if w, found := index[sh.Owner]; found {
			sum := v
			if prev := f.Workers[w].Load; prev != nil {
				sum += *prev
			}
			f.Workers[w].Load = &sum
		}
	}
	l := &Load{Mean: band.Mean, Tolerance: band.Tolerance, Measured: len(loads), Pinned: band.Pinned}
	first := true
	for id, r := range band.Ratio {
		w, found := index[id]
		if !found {
			continue
		}
		r := r
		f.Workers[w].LoadRatio = &r
		if first {
			l.MinRatio, l.MaxRatio, first = r, r, false
		}
		l.MinRatio, l.MaxRatio = min(l.MinRatio, r), max(l.MaxRatio, r)
	}
	l.InBand = !first && l.MaxRatio <= 1+l.Tolerance && l.MinRatio >= 1-l.Tolerance
	return l
}
