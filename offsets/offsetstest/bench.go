package offsetstest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// Benchmark measures a backend's Commit, alone and from parallel goroutines
// (each on its own shard, as a worker's handlers are), and Load. Call it
// from a backend's BenchmarkXxx.
func Benchmark(b *testing.B, open OpenFunc) {
	ctx := context.Background()
	b.Run("Commit", func(b *testing.B) {
		st := mustOpen(b, open)
		for i := 0; b.Loop(); i++ {
			if err := st.Commit(ctx, a, 1, int64(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CommitParallel", func(b *testing.B) {
		st := mustOpen(b, open)
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			id := shard.ID(fmt.Sprintf("bench/shard-%03d", next.Add(1)))
			for i := int64(0); pb.Next(); i++ {
				if err := st.Commit(ctx, id, 1, i); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark goroutine
					return
				}
			}
		})
	})
	b.Run("Load", func(b *testing.B) {
		st := mustOpen(b, open)
		if err := st.Commit(ctx, a, 1, 1); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := st.Load(ctx, a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
