package worker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// TestDrainBeforeStopMovesWarm: a worker stopped with DrainBeforeStop
// keeps processing while the assignor moves its shards away, each
// prepared on its new owner's standby first: every one starts warm, none
// goes without a processing handler for more than a hand-off, and the
// stop returns once it owns nothing, long before the drain's limit. The
// same stop without it releases every shard at once, and they start cold.
// The assignor's own worker (a, the first to start) drains the same way:
// it goes on assigning until it stops.
func TestDrainBeforeStopMovesWarm(t *testing.T) {
	for _, tc := range []struct {
		stopping string
		drain    time.Duration
	}{{"c", time.Minute}, {"c", 0}, {"a", time.Minute}} {
		synctest.Test(t, func(t *testing.T) {
			const restore = 5 * time.Second
			drain := tc.drain
			f := newFleet(t, 12)
			h := newWarmHandler(restore)
			for _, id := range []string{"a", "b", "c"} {
				cfg := f.config(id, h)
				if id == tc.stopping {
					cfg.DrainBeforeStop = drain
				}
				f.startWith(cfg)
				settle(time.Second)
			}
			settle(60 * time.Second)
			others := []string{"a", "b", "c"}
			others = slices.DeleteFunc(others, func(id string) bool { return id == tc.stopping })
			if tc.stopping == "a" {
				snap := f.snapshot()
				if m, ok := snap.Member("a"); !ok || snap.Assignor.Session != m.Session {
					t.Fatalf("a is not the assignor: P/assignor %+v", snap.Assignor)
				}
			}
			before := counts(f.owners())[tc.stopping]
			warm0, cold0, gaps0, _ := h.report()

			began := time.Now()
			if err := f.stop(tc.stopping); err != nil {
				t.Fatalf("stop: %v", err)
			}
			took := time.Since(began)
			settle(30 * time.Second)
			warm, cold, gaps, overlap := h.report()
			x, y := others[0], others[1]
			moved := warm[x] + warm[y] + cold[x] + cold[y] - warm0[x] - warm0[y] - cold0[x] - cold0[y]
			if c := counts(f.owners()); c[x]+c[y] != 12 || moved != before || overlap != 0 {
				t.Fatalf("%s drain %v: after its stop: counts %v, %d of its %d shards started again, %d overlaps", tc.stopping, drain, c, moved, before, overlap)
			}
			newWarm := warm[x] + warm[y] - warm0[x] - warm0[y]
			if drain == 0 {
				if newWarm != 0 || took > 2*time.Second {
					t.Fatalf("no drain: %d of its shards started warm, the stop took %v; want every one cold, a stop at once", newWarm, took)
				}
				return
			}
			if newWarm != before || took > 30*time.Second {
				t.Fatalf("%s drain %v: %d of its %d shards started warm, the stop took %v; want every one warm, well within the limit", tc.stopping, drain, newWarm, before, took)
			}
			checkGaps(t, tc.stopping+"'s stop", gaps[len(gaps0):], before, restore)
			t.Logf("%s's stop took %v; its %d shards moved warm, the longest gap %v", tc.stopping, took, before, slices.Max(gaps[len(gaps0):]))
		})
	}
}

// TestDrainBeforeStopCutShort: in a frozen fleet nothing moves, so a stop
// that drains first would wait its whole limit. Meanwhile the worker says
// it is draining (Status) and keeps its shards; StopNow ends the wait at
// once and the shards are released, to be taken by the others. A stop
// whose draining mark is refused does not wait at all.
func TestDrainBeforeStopCutShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		f.start("a", nil)
		settle(time.Second)
		cfg := f.config("b", f.events.waiting("b"))
		cfg.DrainBeforeStop = time.Hour
		b := f.startWith(cfg)
		settle(60 * time.Second)
		held := counts(f.owners())["b"]
		if held == 0 {
			t.Fatal("b holds nothing to drain")
		}
		if err := f.coord.Fleet().SetFreeze(t.Context(), &shard.Mark{By: "test", Reason: "nothing moves"}); err != nil {
			t.Fatal(err)
		}
		stopped := make(chan error, 1)
		go func() { stopped <- f.stop("b") }()
		settle(10 * time.Second)
		if st := b.w.Status(); st.State != worker.StateDraining || counts(f.owners())["b"] != held {
			t.Fatalf("10 s into the drain of a frozen fleet: state %s, b holds %d of its %d; want draining, all kept", st.State, counts(f.owners())["b"], held)
		}
		select {
		case err := <-stopped:
			t.Fatalf("the stop returned (%v) while the drain could not move anything", err)
		default:
		}
		b.w.StopNow()
		settle(time.Second)
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("stop: %v", err)
			}
		default:
			t.Fatal("StopNow did not end the stop within a second")
		}
		if err := f.coord.Fleet().SetFreeze(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		settle(30 * time.Second)
		if c := counts(f.owners()); c["a"] != 8 {
			t.Fatalf("after b's stop: counts %v, want a to hold all 8", c)
		}

		// A refused mark: the stop goes on at once.
		cfg = f.config("c", f.events.waiting("c"))
		cfg.DrainBeforeStop = time.Hour
		f.startWrapped(cfg, func(c shard.Coordinator) shard.Coordinator {
			return shard.Intercept(c, func(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
				if call.Op == shard.OpJoin && call.Member != nil && call.Member.Draining {
					return errors.New("refused by the test")
				}
				return invoke(ctx)
			})
		})
		settle(60 * time.Second)
		if counts(f.owners())["c"] == 0 {
			t.Fatal("c holds nothing to drain")
		}
		began := time.Now()
		if err := f.stop("c"); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if took := time.Since(began); took > 15*time.Second {
			t.Fatalf("a stop whose draining mark was refused took %v; want it at once, as without the drain", took)
		}
	})
}

// TestDrainBeforeStopEndsWithTheLease: a worker whose session is destroyed
// (by an operator, or expiring while it is cut off) during its drain
// before the stop steps down and Run returns at once, not at the drain's
// limit; its shards go to the others after the lock-delay, and no shard
// runs on two workers at once.
func TestDrainBeforeStopEndsWithTheLease(t *testing.T) {
	for _, how := range []string{"destroyed", "cut off"} {
		synctest.Test(t, func(t *testing.T) {
			f := newFleet(t, 8)
			f.start("a", nil)
			settle(time.Second)
			cfg := f.config("b", f.events.waiting("b"))
			cfg.DrainBeforeStop = time.Hour
			b := f.startWith(cfg)
			settle(60 * time.Second)
			if counts(f.owners())["b"] == 0 {
				t.Fatal("b holds nothing to drain")
			}
			// Frozen: the drain moves nothing and would wait its hour.
			if err := f.coord.Fleet().SetFreeze(t.Context(), &shard.Mark{By: "test", Reason: "nothing moves"}); err != nil {
				t.Fatal(err)
			}
			stopped := make(chan error, 1)
			go func() { stopped <- f.stop("b") }()
			settle(5 * time.Second)
			if st := b.w.Status(); st.State != worker.StateDraining {
				t.Fatalf("5 s into the drain: state %s, want draining", st.State)
			}
			switch how {
			case "destroyed":
				m, ok := f.snapshot().Member("b")
				if !ok {
					t.Fatal("b is not a member")
				}
				if err := f.coord.Sessions().Destroy(t.Context(), m.Session); err != nil {
					t.Fatal(err)
				}
			case "cut off":
				b.faults.Set(faults.Fail)
			}
			settle(testPolicy.TTL + time.Second)
			select {
			case <-stopped:
			default:
				t.Fatalf("session %s: Run still running %v later, in a drain of an hour", how, testPolicy.TTL+time.Second)
			}
			if err := f.coord.Fleet().SetFreeze(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			settle(60 * time.Second)
			if c := counts(f.owners()); c["a"] != 8 {
				t.Fatalf("session %s: counts %v after b stopped, want a to hold all 8", how, c)
			}
			running := map[shard.ID]int{}
			for _, ev := range f.events.list() {
				if !ev.start {
					running[ev.shard]--
					continue
				}
				if running[ev.shard]++; running[ev.shard] > 1 {
					t.Fatalf("session %s: %s started on %s while another handler ran it", how, ev.shard, ev.worker)
				}
			}
		})
	}
}
