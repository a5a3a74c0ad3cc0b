package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

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
		if c := counts(f.owners()); c["a"] != 4 || c["b"] != 4 || c["c"] != 4 {
			t.Fatalf("before: counts %v, want 4 each", c)
		}

		stuck.stuck.Store(true)
		released := time.Now()
		if err := f.stop("c"); err != nil {
			t.Fatal(err)
		}
		settle(20 * time.Second)
		owners := f.owners()
		if len(owners) != 12 {
			t.Fatalf("%d of 12 shards owned 20s after c left with b stuck", len(owners))
		}
		grace := 3 * time.Second // worker.Config default OrphanGrace
		tookOver := 0
		for _, e := range f.events.list() {
			if e.worker == "a" && e.start && e.at.After(released) {
				tookOver++
				if e.at.Sub(released) < grace {
					t.Errorf("a took %s %v after c left, inside the %v orphan grace", e.shard, e.at.Sub(released), grace)
				}
			}
		}
		// c's 4 shards split 2 and 2 (quotas of 6 each): a acquires its 2
		// as c releases them, and takes b's 2 over after the grace — once
		// each, not handed back to b and taken again every round.
		if tookOver != 2 {
			t.Errorf("a took shards %d times after c left; with b stuck it should take b's 2 of c's shards after the grace, once each", tookOver)
		}
	})
}
