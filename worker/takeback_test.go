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

// laggingAcquirer is a coordinator whose Acquire takes nothing while stuck,
// and otherwise answers after a delay: a designated acquirer that is alive,
// first stuck, then merely slower than its peers.
type laggingAcquirer struct {
	shard.Coordinator
	stuck atomic.Bool
	delay atomic.Int64 // time.Duration
}

func (l *laggingAcquirer) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	if l.stuck.Load() {
		return nil, nil
	}
	time.Sleep(time.Duration(l.delay.Load()))
	return l.Coordinator.Acquire(ctx, id, want)
}

// TestReleasedShardIsNotTakenBackBeforeTheGrace is the regression test of
// simulation seed 15 (internal/sim): a worker that had once seen a shard free
// and targeted elsewhere kept that moment as the shard's "take after" time
// for ever, also while it held the shard itself. When it later handed the
// shard off to its designated owner, it found the old moment long past and
// took the shard straight back as a "takeover" — before the designated
// owner, a few milliseconds slower, could acquire it. Round after round the
// same shard went back and forth and the fleet never balanced. The grace
// must count from when the shard was last seen becoming free.
func TestReleasedShardIsNotTakenBackBeforeTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		f.start("a", nil)
		lag := &laggingAcquirer{Coordinator: f.coord}
		lag.stuck.Store(true)
		cfg := f.config("b", f.events.waiting("b"))
		cfg.Coordinator = lag
		b, err := worker.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		defer func() { cancel(); <-done }()

		// b is a live member but takes nothing: after the orphan grace, a
		// takes b's share over and owns everything.
		settle(20 * time.Second)
		if c := counts(f.owners()); c["a"] != 8 {
			t.Fatalf("with b stuck: counts %v, want a owning all 8", c)
		}

		// b recovers, 100 ms slower than a. a hands b its share in rounds;
		// nothing may come back to a before the orphan grace (3 s).
		lag.delay.Store(int64(100 * time.Millisecond))
		lag.stuck.Store(false)
		unstuck := time.Now()
		settle(30 * time.Second)
		for _, e := range f.events.list() {
			if e.worker == "a" && e.start && e.at.After(unstuck) {
				t.Errorf("a took %s back %v after b recovered: a shard handed off must wait the orphan grace for its designated owner", e.shard, e.at.Sub(unstuck))
			}
		}
		if c := counts(f.owners()); c["a"] != 4 || c["b"] != 4 {
			t.Fatalf("30s after b recovered: counts %v, want 4 each", c)
		}
	})
}

// TestStuckAcquirersShardsStayPut: the other half of the same fix. A worker
// that took a stuck acquirer's shard over used to hand it back to that
// acquirer in its next rebalance round and take it again at once (the stale
// grace above), a new token and a handler restart every second. Now it
// marks the acquirer stuck for ten orphan graces: it hands it nothing, and
// takes every one of its orphans, not just one above its own quota, so none
// of them stays free and none moves.
func TestStuckAcquirersShardsStayPut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 12)
		f.start("a", nil)
		lag := &laggingAcquirer{Coordinator: f.coord}
		lag.stuck.Store(true)
		cfg := f.config("b", f.events.waiting("b"))
		cfg.Coordinator = lag
		b, err := worker.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		defer func() { cancel(); <-done }()

		settle(10 * time.Second) // grace 3 s + up to 3 s jitter: every orphan taken over
		if c := counts(f.owners()); c["a"] != 12 {
			t.Fatalf("with b stuck: counts %v, want a owning all 12", c)
		}
		since := time.Now()
		settle(15 * time.Second)
		for _, e := range f.events.list() {
			if e.worker == "a" && e.start && e.at.After(since) {
				t.Errorf("a restarted %s %v later: a taken-over shard was handed back and taken again", e.shard, e.at.Sub(since))
			}
		}
		if c := counts(f.owners()); c["a"] != 12 {
			t.Fatalf("15s later: counts %v, want a still owning all 12", c)
		}
	})
}
