package fleetview_test

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

func loadSnapshot(aLoad, bLoad map[shard.ID]float64) shard.Snapshot {
	cfg := shard.Config{Shards: 4}.Normalize()
	return shard.Snapshot{Config: &cfg,
		Members: []shard.MemberState{
			{Member: shard.Member{ID: "a", Weight: 1, Load: aLoad}, Session: "sa"},
			{Member: shard.Member{ID: "b", Weight: 2, Load: bLoad}, Session: "sb"},
		},
		Shards: []shard.ShardState{{Shard: "stream/shard-000", Session: "sa", Token: 5}, {Shard: "stream/shard-001", Session: "sa", Token: 6},
			{Shard: "stream/shard-002", Session: "sb", Token: 7}, {Shard: "stream/shard-003", Session: "sb", Token: 8}},
	}
}

// TestLoadView: the view carries each worker's load, its ratio to its
// share and each shard's figure, and says whether the band holds.
func TestLoadView(t *testing.T) {
	f := fleetview.Build(fleetview.Input{Name: "t", Now: time.Now(), Tolerance: 0.2, Snapshot: loadSnapshot(
		map[shard.ID]float64{"stream/shard-000": 30, "stream/shard-001": 10},
		map[shard.ID]float64{"stream/shard-002": 60, "stream/shard-003": 20})})
	if f.Load == nil {
		t.Fatalf("no load view for a fleet whose members carry loads")
	}
	// 120 over capacity 3: 40 per unit; a: 40/1 → 1, b: 80/2 → 1.
	if f.Load.Mean != 40 || f.Load.MinRatio != 1 || f.Load.MaxRatio != 1 || !f.Load.InBand || f.Load.Tolerance != 0.2 || f.Load.Measured != 4 {
		t.Fatalf("load view %+v, want mean 40, both ratios 1, in band, tolerance 0.2, 4 measured", *f.Load)
	}
	a, _ := f.Worker("a")
	if a.Load == nil || *a.Load != 40 || a.LoadRatio == nil || *a.LoadRatio != 1 {
		t.Fatalf("worker a: load %v ratio %v, want 40 and 1", a.Load, a.LoadRatio)
	}
	s, _ := f.Shard("stream/shard-002")
	if s.Load == nil || *s.Load != 60 {
		t.Fatalf("stream/shard-002's load %v, want 60", s.Load)
	}

	f = fleetview.Build(fleetview.Input{Name: "t", Now: time.Now(), Snapshot: loadSnapshot(
		map[shard.ID]float64{"stream/shard-000": 90, "stream/shard-001": 10}, map[shard.ID]float64{"stream/shard-002": 20})})
	// The band as the assignor's step judges it: a's 90 alone is above
	// it, so a is pinned (counted as the band's centre plus its other
	// shard), and the band does not hold.
	if f.Load.InBand || f.Load.Tolerance != 0.10 || f.Load.Measured != 3 || len(f.Load.Pinned) != 1 || f.Load.Pinned[0] != "a" {
		t.Fatalf("skewed fleet: %+v, want out of the default band of 0.10, a pinned, 3 measured", *f.Load)
	}
	if a, _ := f.Worker("a"); *a.LoadRatio != f.Load.MaxRatio || *a.LoadRatio <= 1.1 {
		t.Fatalf("a's ratio %v, want the highest, above the band", *a.LoadRatio)
	}

	if f := fleetview.Build(fleetview.Input{Name: "t", Now: time.Now(), Snapshot: loadSnapshot(nil, nil)}); f.Load != nil {
		t.Fatalf("a fleet carrying no loads has a load view: %+v", *f.Load)
	}
}
