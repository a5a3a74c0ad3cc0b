package rebalance

import (
	"fmt"
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
			for i, id := range f.s.Shards {
				f.s.Loads[id] = 1
				if f.s.Holders[i] == a {
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
				if mv.Reason == shard.ReasonLoad && mv.From == a {
					moved++
				}
			}
			if (moved > 0) != c.moves {
				t.Fatalf("%s at %.2f × the mean, shards arrived %v ago: %d load moves off it, want moves: %v (decision moves %v)", a, c.ratio, c.arrived, moved, c.moves, d.Moves)
			}
		})
	}
}

// TestFarMemberSwapsWithAnyPartner: a member far above the band whose
// shards are too heavy for any single move (each would lift its receiver
// above the giver) is offered an exchange with every member, not only the
// four lowest, and with its own shard still in residence (past Patience).
// The case is the one a skewed-load run stayed stuck in for a minute: the
// only exchange that fits is with the fifth lowest member.
func TestFarMemberSwapsWithAnyPartner(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := State{Now: now, Assigned: map[string]Assignment{}, Loads: map[shard.ID]float64{}}
	n := 0
	give := func(member string, load float64, arrived time.Duration) shard.ID {
		id := shard.ID(fmt.Sprintf("s-%03d", n))
		n++
		s.Shards, s.Holders = append(s.Shards, id), append(s.Holders, member)
		s.Loads[id] = load
		a := s.Assigned[member]
		a.Shards = append(a.Shards, id)
		if arrived > 0 {
			if a.Arrived == nil {
				a.Arrived = map[shard.ID]time.Time{}
			}
			a.Arrived[id] = now.Add(-arrived)
		}
		s.Assigned[member] = a
		return id
	}
	member := func(id string, total float64, big ...float64) {
		s.Members = append(s.Members, Member{ID: id, Session: shard.SessionID(id + "#1")})
		for _, b := range big {
			give(id, b, 0)
			total -= b
		}
		for ; total > 0.049; total -= 0.05 {
			give(id, 0.05, 0)
		}
	}
	// x: 0.735 + 0.470 = 1.205 × the mean of 1; p1..p4 low, of small
	// shards only; p5 at 0.96 holds the 0.342 that fits; p6, p7 in band.
	s.Members = append(s.Members, Member{ID: "x", Session: "x#1"})
	give("x", 0.735, 0)
	heavy := give("x", 0.470, 40*time.Second) // resident, past Patience
	member("p1", 0.90)
	member("p2", 0.91)
	member("p3", 0.92)
	member("p4", 0.93)
	member("p5", 0.96, 0.342)
	member("p6", 1.08)
	member("p7", 1.095)
	x := s.Assigned["x"]
	x.OutOfBand = now.Add(-time.Minute)
	s.Assigned["x"] = x
	d, err := Step(s, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	var out, in bool
	for _, mv := range d.Moves {
		out = out || (mv.Shard == heavy && mv.From == "x" && mv.To == "p5" && mv.Reason == shard.ReasonLoad)
		in = in || (mv.From == "p5" && mv.To == "x" && s.Loads[mv.Shard] == 0.342)
	}
	if !out || !in {
		t.Fatalf("x at 1.205 × the mean: moves %v, want its 0.470 exchanged for p5's 0.342", d.Moves)
	}
}
