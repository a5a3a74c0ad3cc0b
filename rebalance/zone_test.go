package rebalance

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// withZones puts members into z zones ("zone-0" … ; now and then "", the
// members with no zone), at random.
func withZones(r *rand.Rand, ms []Member, z int) []Member {
	for i := range ms {
		ms[i].Zone = fmt.Sprintf("zone-%d", r.IntN(z))
		if r.IntN(10) == 0 {
			ms[i].Zone = ""
		}
	}
	return ms
}

// checkZoneQuotas checks zonedCapacities' promise on one input: the quotas
// sum to n; each zone's is the floor or the ceiling of its weight's share
// of n; each member's is the floor or the ceiling of its weight's share of
// its zone's quota.
func checkZoneQuotas(n int, ms []Member, caps []int) error {
	ws := effectiveWeights(ms)
	var total uint64
	zw, zq := map[string]uint64{}, map[string]int{}
	sum := 0
	for i, m := range ms {
		total += ws[i]
		zw[m.Zone] += ws[i]
		zq[m.Zone] += caps[i]
		sum += caps[i]
	}
	if sum != n {
		return fmt.Errorf("quotas sum to %d, want %d", sum, n)
	}
	within := func(q int, num, den uint64, of int) bool { // q is ⌊of·num/den⌋ or its ceiling
		hi, lo := bits.Mul64(uint64(of), num)
		f, r := bits.Div64(hi, lo, den)
		return q == int(f) || (r > 0 && q == int(f)+1)
	}
	for z, w := range zw {
		if !within(zq[z], w, total, n) {
			return fmt.Errorf("zone %q (weight %d of %d) has quota %d of %d shards: not the floor or ceiling of its share", z, w, total, zq[z], n)
		}
	}
	for i, m := range ms {
		if zw[m.Zone] > 0 && !within(caps[i], ws[i], zw[m.Zone], zq[m.Zone]) {
			return fmt.Errorf("member %s (weight %d of its zone's %d) has quota %d of the zone's %d", m.ID, ws[i], zw[m.Zone], caps[i], zq[m.Zone])
		}
	}
	return nil
}

// TestZoneQuotas: over generated fleets (weights, drains, 1 to 5 zones,
// members with no zone, any holdings), the quotas keep each zone within
// one shard of its capacity's share and each member within one of its
// share of its zone's.
func TestZoneQuotas(t *testing.T) {
	forCases(t, 40_000, stepCases, func(t *testing.T, i int, r *rand.Rand) {
		w := 1 + r.IntN(24)
		n := shardCount(r)
		ms, _, _ := genFleet(r, w, n)
		ms = withZones(r, ms, 1+r.IntN(5))
		ids, zones, owned := make([]string, w), make([]string, w), make([]int, w)
		for k, m := range ms {
			ids[k], zones[k], owned[k] = m.ID, m.Zone, r.IntN(n+1)
		}
		caps := zonedCapacities(n, ids, zones, effectiveWeights(ms), owned)
		if err := checkZoneQuotas(n, ms, caps); err != nil {
			t.Fatalf("case %d (%d members, %d shards): %v", i, w, n, err)
		}
	})
}

// zoneCounts is how many shards each zone's live members hold.
func zoneCounts(f *fleet) map[string]int {
	zone := map[string]string{}
	for _, m := range f.s.Members {
		zone[m.ID] = m.Zone
	}
	c := map[string]int{}
	for _, h := range f.s.Holders {
		if z, ok := zone[h]; ok {
			c[z]++
		}
	}
	return c
}

// TestZoneLossMovesOnlyItsShards: 12 workers in 3 zones of unequal
// capacity over 128 shards settle with each zone within one shard of its
// share; when every worker of one zone crashes, only that zone's shards
// move, to the two others in proportion; when it returns it gets its
// share back, at most the move budget at a time, and nothing else moves.
func TestZoneLossMovesOnlyItsShards(t *testing.T) {
	for c := range 20 {
		r := rand.New(rand.NewPCG(seed, uint64(c)))
		f := newFleet(r, 0, 128)
		var zoneC []Member
		for i := range 12 {
			m := Member{ID: fmt.Sprintf("w%02d", i), Weight: 1 + r.IntN(3), Zone: fmt.Sprintf("zone-%c", 'a'+i%3)}
			if m.Zone == "zone-c" {
				zoneC = append(zoneC, m)
			}
			f.join(m)
		}
		p := Policy{MaxMovesInFlight: 4}
		if _, _, err := f.settle(p, time.Second, 200, nil); err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		if err := checkProportions(f); err != nil {
			t.Fatalf("case %d, settled: %v", c, err)
		}
		before := f.snapshot()

		for _, m := range zoneC {
			f.leave(m.ID)
		}
		_, moves, err := f.settle(p, time.Second, 200, func(s State, d Decision) error {
			if len(d.Moves) > 0 {
				for _, mv := range d.Moves {
					if mv.From != "" {
						return fmt.Errorf("a hand-off of %s from %s to %s after zone-c was lost: only its shards may move", mv.Shard, mv.From, mv.To)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("case %d, zone-c lost: %v", c, err)
		}
		for i, h := range before.Holders {
			if h != "" && h[0] == 'w' && f.s.Holders[i] != h && !isIn(zoneC, h) {
				t.Fatalf("case %d: %s moved from %s to %s though its zone stayed", c, before.Shards[i], h, f.s.Holders[i])
			}
		}
		if err := checkProportions(f); err != nil {
			t.Fatalf("case %d, zone-c lost: %v (moves %v)", c, err, moves)
		}

		for _, m := range zoneC {
			f.join(m)
		}
		_, _, err = f.settle(p, time.Second, 400, func(s State, d Decision) error {
			inFlight := 0
			for i, h := range s.Holders {
				if h != "" && !inKey(s.Assigned[h], s.Shards[i]) {
					inFlight++
				}
			}
			if inFlight > p.MaxMovesInFlight {
				return fmt.Errorf("%d hand-offs in flight, over the budget of %d", inFlight, p.MaxMovesInFlight)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("case %d, zone-c back: %v", c, err)
		}
		if err := checkProportions(f); err != nil {
			t.Fatalf("case %d, zone-c back: %v", c, err)
		}
	}
}

// checkProportions checks a settled fleet: each zone holds the floor or
// the ceiling of its capacity's share, every shard held.
func checkProportions(f *fleet) error {
	got := zoneCounts(f)
	held := 0
	for _, n := range got {
		held += n
	}
	if held != len(f.s.Shards) {
		return fmt.Errorf("%d of %d shards held", held, len(f.s.Shards))
	}
	caps := zonedCapacities(len(f.s.Shards), idsOf(f.s.Members), zonesOf(f.s.Members), effectiveWeights(f.s.Members), make([]int, len(f.s.Members)))
	want := map[string]int{}
	for i, m := range f.s.Members {
		want[m.Zone] += caps[i]
	}
	for z, n := range want {
		if d := got[z] - n; d < -1 || d > 1 {
			return fmt.Errorf("zone %s holds %d, its share is %d (zones %v)", z, got[z], n, got)
		}
	}
	return nil
}

func idsOf(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func isIn(ms []Member, id string) bool {
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}

func inKey(a Assignment, id shard.ID) bool {
	for _, s := range a.Shards {
		if s == id {
			return true
		}
	}
	return false
}
