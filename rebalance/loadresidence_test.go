package rebalance

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestResidenceYieldsFarOutside: a member corrected while beyond the band
// by half the tolerance again (above 1.15 × the mean at ±10 %) gives
// shards that are still in their MinResidence, once they have stayed
// Patience; one just outside the band does not, nor do shards that
// arrived less than Patience ago.
func TestResidenceYieldsFarOutside(t *testing.T) {
	for _, c := range []struct {
		name    string
		ratio   float64       // member a's load ÷ the mean
		arrived time.Duration // how long ago a's shards arrived
		moves   bool
	}{
		{"far out, arrived 15 s ago", 1.25, 15 * time.Second, true},
		{"far out, arrived 5 s ago", 1.25, 5 * time.Second, false},
		{"just out, arrived 15 s ago", 1.12, 15 * time.Second, false},
		{"far out, arrived 2 min ago", 1.25, 2 * time.Minute, true},
		{"just out, arrived 2 min ago", 1.12, 2 * time.Minute, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFleet(rand.New(rand.NewPCG(1, 2)), 4, 40)
			if _, _, err := f.settle(Policy{}, time.Second, 40, nil); err != nil {
				t.Fatal(err)
			}
			a := f.s.Members[0].ID
			// a's 10 shards at x each, the other 30 at 1: a's ratio is
			// 10x ÷ ((10x + 30) / 4), so x = 30·ratio / (40 − 10·ratio).
			x := 30 * c.ratio / (40 - 10*c.ratio)
			f.s.Loads = map[shard.ID]float64{}
			for _, id := range f.s.Shards {
				f.s.Loads[id] = 1
				if f.s.Holders[id] == a {
					f.s.Loads[id] = x
				}
			}
			key := f.s.Assigned[a]
			if len(key.Shards) != 10 {
				t.Fatalf("%s has %d shards after settling, want 10", a, len(key.Shards))
			}
			key.OutOfBand = f.s.Now.Add(-time.Minute) // outside for longer than Patience
			key.Arrived = map[shard.ID]time.Time{}
			for _, id := range key.Shards {
				key.Arrived[id] = f.s.Now.Add(-c.arrived)
			}
			f.s.Assigned[a] = key
			d, err := Step(f.s, Policy{})
			if err != nil {
				t.Fatal(err)
			}
			moved := 0
			for _, mv := range d.Moves {
				if mv.Reason == ReasonLoad && mv.From == a {
					moved++
				}
			}
			if (moved > 0) != c.moves {
				t.Fatalf("%s at %.2f × the mean, shards arrived %v ago: %d load moves off it, want moves: %v (decision moves %v)", a, c.ratio, c.arrived, moved, c.moves, d.Moves)
			}
		})
	}
}
