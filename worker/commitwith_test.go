package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// TestCommitWithCountsTheHandlersOwnFencedWrites: a write the handler
// fences itself (as FencedTx does) through CommitWith counts in
// commits_total like Commit's: accepted, stale when the store refuses the
// token; and once the claim's authority has ended it is refused with
// ErrLost without running, counted as lost.
func TestCommitWithCountsTheHandlersOwnFencedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := offmem.New()
		reg := prometheus.NewRegistry()
		coord := faults.Wrap(memory.New())
		var mu sync.Mutex
		var ran int
		var errs []error
		write := func(c *worker.Claim, token shard.Token) error {
			return c.CommitWith(context.Background(), func(ctx context.Context) error {
				mu.Lock()
				ran++
				mu.Unlock()
				return store.Commit(ctx, c.Shard, token, 7)
			})
		}
		w, err := worker.New(worker.Config{ID: "w1", Fleet: shard.Config{Shards: 1}, Coordinator: coord, Offsets: store, Registerer: reg,
			Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
				first, below := write(c, c.Token), write(c, c.Token-1) // its own token; one below the floor
				<-c.Lost()
				after := write(c, c.Token) // after the authority ended
				mu.Lock()
				errs = append(errs, first, below, after)
				mu.Unlock()
				return nil
			})})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(5 * time.Second)
		coord.Set(faults.Hang) // cut off: the lease ends at its local deadline
		time.Sleep(30 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], offsets.ErrStaleToken) || !errors.Is(errs[2], worker.ErrLost) || ran != 2 {
			t.Fatalf("errors %v, writes run %d; want accepted, stale, lost without running", errs, ran)
		}
		for result, want := range map[string]float64{"accepted": 1, "stale": 1, "lost": 1} {
			if got := counterWith(t, reg, "shardlease_commits_total", "result", result); got != want {
				t.Errorf("commits_total{result=%q} = %v, want %v", result, got, want)
			}
		}
		coord.Set(faults.Healthy)
		cancel()
		<-done
	})
}
