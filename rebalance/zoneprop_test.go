package rebalance

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// zoneSteps is how many Step calls TestZoneProperty makes in all: a few
// thousand in every go test, a million with make zoneprop.
var zoneSteps = flag.Int("zones.steps", 20_000, "rebalance.Step calls TestZoneProperty makes over its generated fleets")

// TestZoneProperty: fleets with members in zones (and some without),
// random weights, joins, crashes and drains, stepped until they settle,
// over -zones.steps Step calls in all. After every settling: every shard
// is held by a live member (none is left unowned while a member may take
// it: there are no rules), and every member holds exactly its quota, the
// quotas being the floor or ceiling of each zone's capacity share and,
// within it, of each member's (checkZoneQuotas).
func TestZoneProperty(t *testing.T) {
	steps, fleets, events := 0, 0, 0
	for c := 0; steps < *zoneSteps; c++ {
		r := rand.New(rand.NewPCG(seed, 1<<40+uint64(c)))
		n := 1 + r.IntN(64)
		f := newFleet(r, 0, n)
		zones := 1 + r.IntN(4)
		next := 0
		add := func() {
			m := Member{ID: fmt.Sprintf("m%02d", next), Weight: 1 + r.IntN(3), Zone: fmt.Sprintf("z%d", r.IntN(zones))}
			if r.IntN(8) == 0 {
				m.Zone = ""
			}
			next++
			f.join(m)
		}
		for range 1 + r.IntN(8) {
			add()
		}
		fleets++
		for e := range 12 {
			switch k := r.IntN(10); {
			case e == 0:
			case k < 4 || len(f.s.Members) == 1:
				add()
			case k < 7:
				f.leave(f.s.Members[r.IntN(len(f.s.Members))].ID)
			default: // drain or undrain one
				i := r.IntN(len(f.s.Members))
				f.s.Members[i].Draining = !f.s.Members[i].Draining
			}
			events++
			p := Policy{MaxMovesInFlight: []int{1, 4, 0}[r.IntN(3)]}
			rounds, _, err := f.settle(p, time.Second, 400, nil)
			steps += rounds + 1
			if err != nil {
				t.Fatalf("fleet %d, event %d: %v", c, e, err)
			}
			if err := checkSettled(f, n); err != nil {
				t.Fatalf("fleet %d, event %d (%d members, %d shards): %v", c, e, len(f.s.Members), n, err)
			}
		}
	}
	t.Logf("%d Step calls over %d fleets and %d events: every settling kept every shard owned and every member at its zoned quota", steps, fleets, events)
}

// checkSettled checks a settled fleet: every shard held by a live member,
// and each member's count its quota, the quotas in zone proportion.
func checkSettled(f *fleet, n int) error {
	held := map[string]int{}
	live := f.live()
	for i, h := range f.s.Holders {
		if _, ok := live[h]; !ok {
			return fmt.Errorf("%s is not held by a live member (holder %q)", f.s.Shards[i], h)
		}
		held[h]++
	}
	ms := f.s.Members
	ids, owned := make([]string, len(ms)), make([]int, len(ms))
	for i, m := range ms {
		ids[i], owned[i] = m.ID, held[m.ID]
	}
	caps := zonedCapacities(n, ids, zonesOf(ms), effectiveWeights(ms), owned)
	for i, m := range ms {
		if owned[i] != caps[i] {
			return fmt.Errorf("%s (zone %q, weight %d, draining %v) holds %d, its quota is %d", m.ID, m.Zone, m.Weight, m.Draining, owned[i], caps[i])
		}
	}
	return checkZoneQuotas(n, ms, caps)
}
