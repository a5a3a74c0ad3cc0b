package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// stuckAcquirer is a coordinator whose Acquire can be made to take nothing
// while everything else (renewals, watch) works: a designated acquirer that
// is alive but stuck.
type stuckAcquirer struct {
	shard.Coordinator
	stuck atomic.Bool
}

func (s *stuckAcquirer) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	if s.stuck.Load() {
		return nil, nil
	}
	return s.Coordinator.Acquire(ctx, id, want)
}

// TestOrphanTakenByOthersOnlyAfterTheGrace: when the designated acquirer of
// a free shard does not take it, another worker does — but not before the
// orphan grace, so a slow target is not raced by the whole fleet.
func TestOrphanTakenByOthersOnlyAfterTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 12)
		f.start("a", nil)
		stuck := &stuckAcquirer{Coordinator: f.coord}
		cfg := f.config("b", f.events.waiting("b"))
		cfg.Coordinator = stuck
		b, err := worker.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		defer func() { cancel(); <-done }()
		f.start("c", nil)
		settle(20 * time.Second)
		before := f.owners()
		if c := counts(before); c["a"] != 4 || c["b"] != 4 || c["c"] != 4 {
			t.Fatalf("before: counts %v, want 4 each", c)
		}

		stuck.stuck.Store(true)
		released := time.Now()
		if err := f.stop("c"); err != nil {
			t.Fatal(err)
		}
		// Which of c's shards the planner designates to b (stuck) rather
		// than to a: only those are a's to take over, after the grace. a's
		// own designated shards it takes at once, as it should.
		plan, err := rebalance.Compute(rebalance.Input{Shards: f.shards.IDs(),
			Members: []rebalance.Member{{ID: "a"}, {ID: "b"}}, Owners: f.owners()})
		if err != nil {
			t.Fatal(err)
		}
		forB := map[shard.ID]bool{}
		for id, w := range before {
			if w == "c" && plan.Target[id] == "b" {
				forB[id] = true
			}
		}
		if len(forB) == 0 {
			t.Fatalf("setup: none of c's shards is designated to b (plan %v): the test would check nothing", plan.Target)
		}
		settle(20 * time.Second)
		owners := f.owners()
		if len(owners) != 12 {
			t.Fatalf("%d of 12 shards owned 20s after c left with b stuck", len(owners))
		}
		grace := 3 * time.Second // worker.Config default OrphanGrace
		tookOver := 0
		for _, e := range f.events.list() {
			if e.worker == "a" && e.start && e.at.After(released) && forB[e.shard] {
				tookOver++
				if e.at.Sub(released) < grace {
					t.Errorf("a took %s (designated to b) %v after c left, inside the %v orphan grace", e.shard, e.at.Sub(released), grace)
				}
			}
		}
		// Each of b's shards is taken over once, not handed back to b and
		// taken again every round.
		if tookOver != len(forB) {
			t.Errorf("a took b's designated shards %d times; want each of the %d once, after the grace", tookOver, len(forB))
		}
	})
}
