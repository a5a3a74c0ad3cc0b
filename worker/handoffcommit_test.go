package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// TestCommitAfterAHandOffWithTheHandlersContext: a handler that commits
// once more after its context ended, with that context, as the README's
// does, has its commit stored on a hand-off (cause ErrRevoked: the claim
// drains) and refused with ErrLost on a loss (the lease gone), without
// wrapping the context in anything.
func TestCommitAfterAHandOffWithTheHandlersContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 2)
		var mu sync.Mutex
		results := map[string][]error{} // cause → the last commits' errors
		last := func(ctx context.Context, c *worker.Claim) error {
			<-ctx.Done()
			err := c.Commit(ctx, 99)
			cause := "revoked"
			if errors.Is(context.Cause(ctx), worker.ErrLost) {
				cause = "lost"
			}
			mu.Lock()
			results[cause] = append(results[cause], err)
			mu.Unlock()
			return nil
		}
		f.start("a", worker.HandlerFunc(last))
		settle(5 * time.Second)
		if err := f.stop("a"); err != nil { // a hand-off of both shards
			t.Fatal(err)
		}
		for _, id := range f.shards.IDs() {
			if cp, _ := f.store.Load(context.Background(), id); cp.Offset != 99 {
				t.Errorf("%s: checkpoint %d after the hand-off, want the handler's last commit, 99", id, cp.Offset)
			}
		}

		b := f.start("b", worker.HandlerFunc(last))
		settle(5 * time.Second)
		b.faults.Set(faults.Hang) // cut off: its lease ends at the local deadline
		settle(30 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if rs := results["revoked"]; len(rs) != 2 || rs[0] != nil || rs[1] != nil {
			t.Errorf("commits after a hand-off: %v, want two accepted", rs)
		}
		if rs := results["lost"]; len(rs) != 2 || !errors.Is(rs[0], worker.ErrLost) || !errors.Is(rs[1], worker.ErrLost) {
			t.Errorf("commits after a loss: %v, want two refused with ErrLost", rs)
		}
	})
}

// gatedCommits holds every commit until the gate opens or its context
// ends: a commit in flight when something happens to the claim.
type gatedCommits struct {
	offsets.Store
	gate chan struct{}
}

func (g gatedCommits) Commit(ctx context.Context, s shard.ID, t shard.Token, off int64) error {
	select {
	case <-g.gate:
		return g.Store.Commit(ctx, s, t, off)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// TestACommitInFlightSurvivesTheHandOff: a commit sent before the hand-off
// and still in flight when it comes is not cancelled by it: the claim
// drains, and the commit lands.
func TestACommitInFlightSurvivesTheHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 1)
		gated := gatedCommits{Store: f.store, gate: make(chan struct{})}
		var commitErr error
		committed := make(chan struct{})
		cfg := f.config("a", worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			commitErr = c.Commit(ctx, 42) // in flight across the hand-off
			close(committed)
			return nil
		}))
		cfg.Offsets = gated
		f.startWith(cfg)
		settle(5 * time.Second)
		stopped := make(chan error, 1)
		go func() { stopped <- f.stop("a") }() // the hand-off, while the commit waits
		settle(time.Second)
		close(gated.gate)
		<-committed
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if commitErr != nil {
			t.Errorf("the commit in flight at the hand-off: %v, want it stored", commitErr)
		}
		if cp, _ := f.store.Load(context.Background(), f.shards.IDs()[0]); cp.Offset != 42 {
			t.Errorf("checkpoint %d, want 42", cp.Offset)
		}
	})
}

// TestFenceRefusedByALostHistoryIsNamed: a store whose floor is above any
// token the coordinator gives (its history was lost: a rebuilt or restored
// coordinator) refuses the new claim's fence while the claim still holds
// its lock; the worker counts it as that, not as a newer owner, and tries
// the shard again after doubling pauses rather than at once (it locked,
// fenced and released half a million times in 5 s before).
func TestFenceRefusedByALostHistoryIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 1)
		if err := f.store.Fence(context.Background(), f.shards.IDs()[0], 1_000_000); err != nil {
			t.Fatal(err)
		}
		reg := newRegistry()
		cfg := f.config("a", worker.HandlerFunc(idle))
		cfg.Registerer = reg
		f.startWith(cfg)
		settle(30 * time.Second)
		// Pauses of 2, 4, 8 and 16 s (the renewal interval, doubling): five
		// tries in 30 s.
		if n := counterWith(t, reg, "shardlease_history_behind_total", "worker", "a"); n < 1 || n > 5 {
			t.Errorf("history_behind_total = %v after 30 s, want the refusals counted, at most 5", n)
		}
	})
}
