package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
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
