package rebalance

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// BenchmarkStepLoad steps a fleet of 10,000 shards × 100 members with
// Zipf(1.1) loads (rand.Zipf draws, as zipfDraws), in two states: skewed
// (count-balanced, every member marked out of band long enough: the first
// wave is planned, up to MaxMovesInFlight load moves) and steady (the
// same fleet once the waves converged: the band is checked, nothing
// moves). BenchmarkStepCount is the same fleet count-balanced, stepped
// without loads (at rest: nothing moves), for comparison.
func BenchmarkStepLoad(b *testing.B) {
	skewed, steady := loadBenchStates(b)
	for _, c := range []struct {
		name string
		s    State
	}{{"skewed", skewed}, {"steady", steady}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Step(c.s, Policy{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStepCount(b *testing.B) {
	rest, _ := loadBenchStates(b)
	rest.Loads = nil
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Step(rest, Policy{}); err != nil {
			b.Fatal(err)
		}
	}
}

// loadBenchStates builds BenchmarkStepLoad's two states.
func loadBenchStates(b *testing.B) (skewed, steady State) {
	r := rand.New(rand.NewPCG(17, 1))
	f := newFleet(r, 100, 10_000)
	if _, _, err := f.settle(Policy{}, time.Second, 50, nil); err != nil {
		b.Fatal(err)
	}
	f.s.Loads = zipfDraws(r, f.s.Shards, 1.1)
	for _, m := range f.s.Members {
		a := f.s.Assigned[m.ID]
		a.OutOfBand = f.s.Now.Add(-time.Minute)
		f.s.Assigned[m.ID] = a
	}
	skewed = f.snapshot()
	for range 60 {
		d, err := f.step(Policy{})
		if err != nil {
			b.Fatal(err)
		}
		f.apply(d)
		f.act()
		f.s.Now = f.s.Now.Add(time.Second)
	}
	return skewed, f.snapshot()
}

// BenchmarkStepStandbys steps 1,000 members (one zone) × 100,000 shards
// at rest with K standbys for failover: "cold" is the step that first
// places them on a fleet at rest without any, "steady" the step at rest
// once they are placed (nothing changes).
func BenchmarkStepStandbys(b *testing.B) {
	r := rand.New(rand.NewPCG(23, 1))
	base := newWarmFleet(r, 1000, 100_000, 0)
	if _, _, err := base.settle(Policy{}, time.Second, 20, nil); err != nil {
		b.Fatal(err)
	}
	for _, k := range []int{0, 1, 2} {
		p := Policy{Standbys: k}
		cold := base.snapshot()
		f := &warmFleet{fleet: &fleet{s: base.snapshot(), kinds: base.kinds, r: r}, started: map[string]map[shard.ID]time.Time{}}
		for range 3 {
			d, err := f.step(p)
			if err != nil {
				b.Fatal(err)
			}
			f.apply(d)
			f.act()
		}
		steady := f.snapshot()
		for _, c := range []struct {
			name string
			s    State
		}{{"cold", cold}, {"steady", steady}} {
			b.Run(fmt.Sprintf("K=%d/%s", k, c.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := Step(c.s, p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
