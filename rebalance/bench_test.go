package rebalance

import (
	"fmt"
	"math/rand/v2"
	"testing"

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
