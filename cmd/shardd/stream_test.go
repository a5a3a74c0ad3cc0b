package main

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/offsetlog"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// TestStreamRecordsItsRuns: with a history, each run of the stream handler
// is recorded from its start (after the fence) to its end, and every commit
// that reaches the store comes after an effect line of its run with the
// same offset, written inside the run: what the chaos suite's run check
// relies on.
func TestStreamRecordsItsRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w1.jsonl")
	out, err := offsetlog.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	inner := offmem.New()
	defer inner.Close()
	store := offsetlog.New(inner, out, "w1")
	w, err := worker.New(worker.Config{
		ID: "w1", Fleet: shard.Config{Shards: 4}, Coordinator: memory.New(), Offsets: store,
		Handler: stream{rate: 1000, commitEvery: 100 * time.Millisecond, log: zap.NewNop(), history: store},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}

	ops, runs, err := offsetlog.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 {
		t.Fatalf("%d runs, want one per shard: %v", len(runs), runs)
	}
	fences := map[shard.ID]int64{}
	for _, o := range ops {
		if o.Kind == offsetlog.OpFence {
			fences[o.Shard] = o.End
		}
	}
	byClaim := map[shard.ID]offsetlog.Interval{}
	effects := 0
	for _, r := range runs {
		byClaim[r.Shard] = r
		effects += len(r.Effects)
		if r.End == math.MaxInt64 || r.Start < fences[r.Shard] {
			t.Errorf("run %v from %d to %d: want it after its fence (%d) and ended", r, r.Start, r.End, fences[r.Shard])
		}
	}
	commits := 0
	for _, o := range ops {
		if o.Kind != offsetlog.OpCommit {
			continue
		}
		commits++
		r := byClaim[o.Shard]
		found := false
		for _, e := range r.Effects {
			found = found || (e.Offset == o.Offset && r.Start <= e.At && e.At <= o.Start)
		}
		if r.Token != o.Token || !found || o.End > r.End {
			t.Errorf("commit %v: no effect of run %v (token %d, %d effects) before it, or it outlived the run", o, r, r.Token, len(r.Effects))
		}
	}
	if commits < 8 || effects != commits {
		t.Errorf("%d commits and %d effects, want the same number, at least 8 (a few per shard and a final one each)", commits, effects)
	}
}

// TestStreamClosesForAReshard: told its shard closes, the synthetic stream
// commits what it processed as the shard's end and returns, so a fleet of
// `shardd worker`s finishes a reshard by itself: two shards split into
// four, every child owned, every parent closed with a committed end.
func TestStreamClosesForAReshard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		coord, store := memory.New(), offmem.New()
		defer store.Close()
		w, err := worker.New(worker.Config{
			ID: "w1", Fleet: shard.Config{Shards: 2}, Coordinator: coord, Offsets: store,
			Handler: stream{rate: 1000, commitEvery: 100 * time.Millisecond, log: zap.NewNop()},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(5 * time.Second)
		op := admin.Operator{Coordinator: coord, Name: "test", By: "test"}
		if _, err := op.Reshard(ctx, admin.ReshardPlan{Shards: 4}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		snap, err := coord.Fleet().Watch(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Config.Resharding() || len(snap.Owners()) != 4 {
			t.Fatalf("5 s after the reshard began: resharding %v, owners %v; want done and the 4 children owned", snap.Config.Resharding(), snap.Owners())
		}
		for _, p := range []shard.ID{"stream/shard-000", "stream/shard-001"} {
			st, _ := snap.Shard(p)
			cp, err := store.Load(ctx, p)
			if err != nil || st.Owner.Released != shard.ReasonClosed || cp.Offset <= 0 {
				t.Errorf("parent %s: released %v, checkpoint %+v (%v); want closed with a committed end", p, st.Owner.Released, cp, err)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
