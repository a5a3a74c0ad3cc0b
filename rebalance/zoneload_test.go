package rebalance

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestZonesUnderLoadFollowTheBand: with load balancing, a zone's load
// per capacity is a capacity-weighted mean of its members' ratios, so it
// stays inside the band whenever they do: nothing zone-specific keeps it
// there. 9 members in zones of 2, 3 and 4 with weights 1–2, 120 shards
// of loads 1–3; after the fleet balances, and again after one zone is
// lost, every member is inside the band (so every zone is: its figures
// are logged), and the loss moved only the lost zone's shards.
func TestZonesUnderLoadFollowTheBand(t *testing.T) {
	r := rand.New(rand.NewPCG(seed, 30))
	f := newFleet(r, 0, 120)
	zoneOf := []string{"a", "a", "b", "b", "b", "c", "c", "c", "c"}
	for k, z := range zoneOf {
		f.join(Member{ID: fmt.Sprintf("m%d", k), Zone: z, Weight: 1 + k%2})
	}
	loads := map[shard.ID]float64{}
	for _, id := range f.s.Shards {
		loads[id] = 1 + 2*r.Float64()
	}
	p := Policy{Load: LoadPolicy{Patience: time.Second}}
	check := func(when string) {
		t.Helper()
		load, capacity := map[string]float64{}, map[string]float64{}
		zl, zc := map[string]float64{}, map[string]float64{}
		var total, totalCap float64
		for i, h := range f.s.Holders {
			load[h] += loads[f.s.Shards[i]]
		}
		for _, m := range f.s.Members {
			capacity[m.ID] = float64(m.Weight)
			zl[m.Zone] += load[m.ID]
			zc[m.Zone] += float64(m.Weight)
			total += load[m.ID]
			totalCap += float64(m.Weight)
		}
		mean := total / totalCap
		for _, m := range f.s.Members {
			if ratio := load[m.ID] / capacity[m.ID] / mean; ratio < 1-DefaultTolerance || ratio > 1+DefaultTolerance {
				t.Fatalf("%s: member %s at %.3f of the mean, outside the band", when, m.ID, ratio)
			}
		}
		for z := range zl { // inside the band whenever the members are (their weighted mean): shown, not checked
			t.Logf("%s: zone %s carries %.3f of its capacity's share of the load", when, z, zl[z]/zc[z]/mean)
		}
	}
	runLoad(t, f, p, 300, time.Second, func(int) map[shard.ID]float64 { return loads })
	check("balanced")
	before := map[shard.ID]string{}
	for i, h := range f.s.Holders {
		before[f.s.Shards[i]] = h
	}
	for k, z := range zoneOf {
		if z == "b" {
			f.leave(fmt.Sprintf("m%d", k))
		}
	}
	runLoad(t, f, p, 300, time.Second, func(int) map[shard.ID]float64 { return loads })
	check("zone b lost")
	others := 0
	for i, h := range f.s.Holders {
		if was := before[f.s.Shards[i]]; zoneOf[was[1]-'0'] != "b" && was != h {
			others++
		}
	}
	if others != 0 {
		t.Errorf("zone b lost: %d shards of the other zones moved, want only zone b's (smooth loads: the survivors take them by placement alone)", others)
	}
}
