package worker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// warmHandler is a stateful handler whose state takes restore to build:
// its standby builds it and reports caught up; Process started cold
// builds it first. It records, per shard, when a Process ended and when
// the next one was ready to process, and whether it started warm.
type warmHandler struct {
	restore time.Duration
	mu      sync.Mutex
	ended   map[shard.ID]time.Time // when the shard's last Process returned
	gaps    []time.Duration        // per move: a Process ended to the next one processing
	warm    map[string]int         // Process runs by worker, started warm
	cold    map[string]int         // and cold
	running map[shard.ID]int
	overlap int
}

func newWarmHandler(restore time.Duration) *warmHandler {
	return &warmHandler{restore: restore, ended: map[shard.ID]time.Time{}, warm: map[string]int{}, cold: map[string]int{}, running: map[shard.ID]int{}}
}

func (h *warmHandler) Standby(ctx context.Context, s *worker.StandbyClaim) error {
	cp, err := s.Committed(ctx)
	if err != nil {
		return err
	}
	select {
	case <-time.After(h.restore):
	case <-ctx.Done():
		return nil
	}
	s.Report(cp.Offset, true)
	<-ctx.Done()
	return nil
}

func (h *warmHandler) Process(ctx context.Context, c *worker.Claim) error {
	h.mu.Lock()
	if h.running[c.Shard]++; h.running[c.Shard] > 1 {
		h.overlap++
	}
	warm := c.Warm != nil && c.Warm.CaughtUp
	if warm {
		h.warm[c.Worker]++
	} else {
		h.cold[c.Worker]++
	}
	h.mu.Unlock()
	if !warm {
		select {
		case <-time.After(h.restore):
		case <-ctx.Done():
		}
	}
	h.mu.Lock()
	if end, ok := h.ended[c.Shard]; ok && ctx.Err() == nil {
		h.gaps = append(h.gaps, time.Since(end))
	}
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	h.running[c.Shard]--
	h.ended[c.Shard] = time.Now()
	h.mu.Unlock()
	return nil
}

func (h *warmHandler) report() (warm, cold map[string]int, gaps []time.Duration, overlap int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return clone(h.warm), clone(h.cold), append([]time.Duration(nil), h.gaps...), h.overlap
}

func clone(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestWarmMovesEndToEnd: workers whose handler restores state for 5 s,
// with the real assignor. A join and then a drain move shards only once
// the target's standby is warm: every moved shard starts warm, and no
// moved shard goes without a processing handler for more than a hand-off
// (well under the 5 s a cold start would cost). No shard ever runs twice.
func TestWarmMovesEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const restore = 5 * time.Second
		f := newFleet(t, 12)
		h := newWarmHandler(restore)
		for _, id := range []string{"a", "b"} {
			f.start(id, h)
		}
		settle(30 * time.Second)
		if warm, cold, _, _ := h.report(); len(warm) != 0 || cold["a"]+cold["b"] != 12 {
			t.Fatalf("the first placement: warm %v cold %v; want the 12 shards started cold (nothing to prepare from)", warm, cold)
		}

		f.start("c", h)
		settle(30 * time.Second)
		warm, cold, gaps, _ := h.report()
		if c := counts(f.owners()); c["c"] != 4 || warm["c"] != 4 || cold["c"] != 0 {
			t.Fatalf("after c joined: counts %v, c started %d warm and %d cold; want c to own 4, all warm", c, warm["c"], cold["c"])
		}
		checkGaps(t, "the join", gaps, 4, restore)

		var m shard.MemberState
		for _, mm := range f.snapshot().Members {
			if mm.ID == "a" {
				m = mm
			}
		}
		drained := m.Member
		drained.Draining = true
		if err := f.coord.Members().Join(t.Context(), m.Session, drained); err != nil {
			t.Fatalf("setting Draining on a's member key: %v", err)
		}
		settle(30 * time.Second)
		warm, cold, gaps, overlap := h.report()
		if c := counts(f.owners()); c["a"] != 0 || warm["b"]+warm["c"] != 8 || cold["b"]+cold["c"] != 6 {
			t.Fatalf("after a's drain: counts %v, warm %v, cold %v; want a's 4 shards moved warm (b started its first 6 cold)", c, warm, cold)
		}
		checkGaps(t, "the join and the drain", gaps, 8, restore)
		t.Logf("longest gaps without a processing handler, join and drain: %v", gaps)
		if overlap != 0 {
			t.Fatalf("%d times a shard's Process ran beside another of the same shard", overlap)
		}
		snap := f.snapshot()
		for w, a := range snap.Assignments {
			if len(a.Standby) != 0 {
				t.Errorf("at rest %s's key lists standbys %v", w, a.Standby)
			}
		}
	})
}

// checkGaps wants n gaps, each far below a cold start's restore.
func checkGaps(t *testing.T, what string, gaps []time.Duration, n int, restore time.Duration) {
	t.Helper()
	if len(gaps) != n {
		t.Fatalf("%s: %d moves measured (%v), want %d", what, len(gaps), gaps, n)
	}
	for _, g := range gaps {
		if g > restore/10 {
			t.Fatalf("%s: a moved shard went %v without a processing handler; want a warm hand-off, far below the %v restore (%v)", what, g, restore, fmt.Sprint(gaps))
		}
	}
}

// TestFailoverPromotesAWarmStandby: with one standby per shard asked for
// in the fleet's policy, every owned shard's standby runs, reported
// ready; when a worker is cut off from the coordinator (as in a crash),
// each of its shards is taken, once the lease allows, by the worker that
// ran its standby, and starts warm, even where that takes the worker over
// its share of shards (the standbys spread evenly, the lost shards' need
// not): the balance is then restored by warm moves, so no shard starts
// cold.
func TestFailoverPromotesAWarmStandby(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const restore = 5 * time.Second
		f := newFleet(t, 12)
		if _, err := f.coord.Fleet().SetPolicy(t.Context(), shard.BalancePolicy{Standbys: 1}, false); err != nil {
			t.Fatal(err)
		}
		h := newWarmHandler(restore)
		for _, id := range []string{"a", "b", "c"} {
			f.start(id, h)
		}
		settle(30 * time.Second)
		snap := f.snapshot()
		listed := map[shard.ID]int{}
		standbyOf := map[shard.ID]string{}
		for w, a := range snap.Assignments {
			m, _ := snap.Member(w)
			for _, id := range a.Standby {
				listed[id]++
				standbyOf[id] = w
				if !m.Standby[id].Ready {
					t.Errorf("%s lists %s as a standby, reported %+v, want ready", w, id, m.Standby[id])
				}
			}
		}
		for _, id := range f.shards.IDs() {
			if listed[id] != 1 {
				t.Fatalf("standbys listed: %v, want every shard once", listed)
			}
		}
		var lost []shard.ID
		for id, w := range snap.Owners() {
			if w == "b" {
				lost = append(lost, id)
			}
		}
		warm0, _, _, _ := h.report()

		f.running["b"].faults.Set(faults.Fail)
		// The first owner of each of b's shards after the cut.
		first := map[shard.ID]string{}
		for range 600 {
			time.Sleep(100 * time.Millisecond)
			for id, w := range f.owners() {
				if slices.Contains(lost, id) && w != "b" && w != "" && first[id] == "" {
					first[id] = w
				}
			}
		}
		warm, cold, _, overlap := h.report()
		for _, id := range lost {
			if first[id] != standbyOf[id] {
				t.Errorf("%s after b was cut off: first owned by %q, want its standby %s", id, first[id], standbyOf[id])
			}
		}
		if got := warm["a"] + warm["c"] - warm0["a"] - warm0["c"]; got < len(lost) || cold["a"]+cold["c"] != 8 || overlap != 0 {
			t.Fatalf("b's %d shards: %d started warm on a and c (cold %v, %d overlaps); want every one warm", len(lost), got, cold, overlap)
		}
	})
}
