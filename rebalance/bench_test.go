package rebalance

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// BenchmarkCompute plans fleets of 128 shards × 12 workers and 4096 × 64 in
// four states: steady (converged: the usual case on every watch wake-up),
// join and leave (one member more or fewer than a converged fleet), and cold
// (nothing held: every shard placed by rendezvous, the worst case).
func BenchmarkCompute(b *testing.B) {
	for _, size := range []struct{ shards, workers int }{{128, 12}, {4096, 64}} {
		r := rand.New(rand.NewPCG(1, 2))
		cold := Input{Shards: shard.Config{Shards: size.shards}.IDs(), Members: genMembers(r, size.workers)}
		p, err := Compute(cold)
		if err != nil {
			b.Fatal(err)
		}
		steady := converged(cold, p)
		join := steady
		join.Members = append(join.Members[:size.workers:size.workers], Member{ID: "joiner", Weight: 1})
		leave := steady
		leave.Members = steady.Members[1:]
		for _, state := range []struct {
			name string
			in   Input
		}{{"steady", steady}, {"join", join}, {"leave", leave}, {"cold", cold}} {
			b.Run(fmt.Sprintf("%dx%d/%s", size.shards, size.workers, state.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Compute(state.in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

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
