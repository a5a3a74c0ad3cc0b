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

// TestRaisedGenerationEndsALostHistory: once an operator raises the
// fleet's generation (`shardctl recover`), a worker whose claims a lost
// history's floor refused takes the shard again within its longest pause
// (10 s), with a token of the new generation that the store accepts, and
// its handler runs from the committed offset.
func TestRaisedGenerationEndsALostHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 1)
		id := f.shards.IDs()[0]
		if err := f.store.Fence(context.Background(), id, 1_000_000); err != nil {
			t.Fatal(err)
		}
		if err := f.store.Commit(context.Background(), id, 1_000_000, 77); err != nil {
			t.Fatal(err)
		}
		started := make(chan int64, 16)
		f.start("a", worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			started <- c.Start.Offset
			<-ctx.Done()
			return nil
		}))
		settle(60 * time.Second) // the pauses reach their cap
		select {
		case off := <-started:
			t.Fatalf("the handler ran (from %d) while the history was behind", off)
		default:
		}
		if _, err := f.coord.Fleet().RaiseGeneration(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		raised := time.Now()
		select {
		case off := <-started:
			if took := time.Since(raised); took > 11*time.Second {
				t.Errorf("the shard ran %v after the raise, want within the 10 s pause", took)
			}
			if off != 77 {
				t.Errorf("the handler started from %d, want the committed 77", off)
			}
		case <-time.After(time.Minute):
			t.Fatal("the shard did not run within a minute of the raise")
		}
		if st := f.snapshot().Shards[0]; st.Token.Generation() != 1 || !st.Held() {
			t.Errorf("%s after the raise = %+v, want held in generation 1", id, st)
		}
		if cp, err := f.store.Load(context.Background(), id); err != nil || cp.Floor.Generation() != 1 {
			t.Errorf("the store's floor after the raise = %+v, %v; want a generation-1 token", cp, err)
		}
	})
}
