package lincheck_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/anishathalye/porcupine"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/bolt"
	"github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/offsets/offsetstest/lincheck"
	"github.com/shardlease/shardlease/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The model on hand-made histories: it must accept the correct ones and
// refuse each kind of wrong one, or a passing check means nothing.
func TestModel(t *testing.T) {
	type op struct {
		in        lincheck.Input
		out       lincheck.Output
		call, ret int64
	}
	const s = shard.ID("s")
	commit := func(tok shard.Token, off int64, stale bool, call, ret int64) op {
		return op{lincheck.Input{Kind: lincheck.Commit, Shard: s, Token: tok, Offset: off}, lincheck.Output{Stale: stale}, call, ret}
	}
	fence := func(tok shard.Token, stale bool, call, ret int64) op {
		return op{lincheck.Input{Kind: lincheck.Fence, Shard: s, Token: tok}, lincheck.Output{Stale: stale}, call, ret}
	}
	load := func(cp offsets.Checkpoint, call, ret int64) op {
		return op{lincheck.Input{Kind: lincheck.Load, Shard: s}, lincheck.Output{CP: cp}, call, ret}
	}
	tests := []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"sequential handoff", []op{
			commit(5, 100, false, 1, 2), fence(7, false, 3, 4), load(offsets.Checkpoint{Offset: 100, Token: 5, Floor: 7}, 5, 6),
			commit(5, 110, true, 7, 8), commit(7, 120, false, 9, 10), load(offsets.Checkpoint{Offset: 120, Token: 7, Floor: 7}, 11, 12),
		}, porcupine.Ok},
		{"overlapping writes, either order", []op{
			commit(5, 100, false, 1, 4), commit(7, 120, false, 2, 3), load(offsets.Checkpoint{Offset: 120, Token: 7, Floor: 7}, 5, 6),
		}, porcupine.Ok},
		{"overlapping, lower rejected", []op{
			commit(5, 100, true, 1, 4), commit(7, 120, false, 2, 3),
		}, porcupine.Ok},
		{"stale write accepted", []op{
			fence(7, false, 1, 2), commit(5, 100, false, 3, 4),
		}, porcupine.Illegal},
		{"load misses an acknowledged commit", []op{
			commit(5, 100, false, 1, 2), load(offsets.Checkpoint{}, 3, 4),
		}, porcupine.Illegal},
		{"load sees the floor but not the offset", []op{
			commit(5, 100, false, 1, 2), commit(6, 200, false, 3, 4), load(offsets.Checkpoint{Offset: 100, Token: 5, Floor: 6}, 5, 6),
		}, porcupine.Illegal},
		{"rejection without cause", []op{
			commit(5, 100, false, 1, 2), commit(5, 110, true, 3, 4),
		}, porcupine.Illegal},
		{"fence changed the offset", []op{
			commit(5, 100, false, 1, 2), fence(6, false, 3, 4), load(offsets.Checkpoint{Floor: 6}, 5, 6),
		}, porcupine.Illegal},
		{"unknown commit took effect", []op{
			{lincheck.Input{Kind: lincheck.Commit, Shard: s, Token: 5, Offset: 100}, lincheck.Output{Unknown: true}, 1, 100},
			load(offsets.Checkpoint{Offset: 100, Token: 5, Floor: 5}, 3, 4),
		}, porcupine.Ok},
		{"unknown commit did not take effect", []op{
			{lincheck.Input{Kind: lincheck.Commit, Shard: s, Token: 5, Offset: 100}, lincheck.Output{Unknown: true}, 1, 100},
			load(offsets.Checkpoint{}, 3, 4),
		}, porcupine.Ok},
		{"unknown commit cannot explain a third offset", []op{
			{lincheck.Input{Kind: lincheck.Commit, Shard: s, Token: 5, Offset: 100}, lincheck.Output{Unknown: true}, 1, 100},
			load(offsets.Checkpoint{Offset: 90, Token: 5, Floor: 5}, 3, 4),
		}, porcupine.Illegal},
		{"other shards do not interfere", []op{
			commit(5, 100, false, 1, 2),
			{lincheck.Input{Kind: lincheck.Fence, Shard: "t", Token: 9}, lincheck.Output{}, 3, 4},
			commit(6, 110, false, 5, 6),
		}, porcupine.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := make([]porcupine.Operation, len(tt.ops))
			for i, o := range tt.ops {
				h[i] = porcupine.Operation{ClientId: i, Input: o.in, Output: o.out, Call: o.call, Return: o.ret}
			}
			if got, _ := lincheck.Check(h); got != tt.want {
				t.Fatalf("Check = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMemory(t *testing.T) {
	st := memory.New()
	defer st.Close()
	lincheck.Run(t, []offsets.Store{st}, lincheck.Workload{Seed: 1})
}

func TestBolt(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "offsets.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lincheck.Run(t, []offsets.Store{st}, lincheck.Workload{Seed: 2})
}

// racyStore breaks the rule on purpose: it checks the token and writes in
// two steps, yielding in between, the bug the fence exists to rule out (a
// read-modify-write without a transaction). The checker must catch it.
type racyStore struct {
	mu  sync.Mutex
	cps map[shard.ID]offsets.Checkpoint
}

func (r *racyStore) get(s shard.ID) offsets.Checkpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cps[s]
}

func (r *racyStore) put(s shard.ID, cp offsets.Checkpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cps[s] = cp
}

func (r *racyStore) update(s shard.ID, apply func(offsets.Checkpoint) (offsets.Checkpoint, error)) error {
	next, err := apply(r.get(s)) // check …
	if err != nil {
		return err
	}
	runtime.Gosched() // … someone else writes here …
	r.put(s, next)    // … and this write undoes theirs
	return nil
}

func (r *racyStore) Commit(_ context.Context, s shard.ID, t shard.Token, off int64) error {
	return r.update(s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) { return offsets.ApplyCommit(cp, s, t, off) })
}

func (r *racyStore) Fence(_ context.Context, s shard.ID, t shard.Token) error {
	return r.update(s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) { return offsets.ApplyFence(cp, s, t) })
}

func (r *racyStore) Load(_ context.Context, s shard.ID) (offsets.Checkpoint, error) {
	return r.get(s), nil
}

func (r *racyStore) Close() error { return nil }

// The check can fail: a store whose check and write are not atomic is
// refused in at least one of several runs (in practice, in nearly all).
func TestCatchesNonAtomicStore(t *testing.T) {
	const runs = 10
	illegal := 0
	for i := range runs {
		st := &racyStore{cps: map[shard.ID]offsets.Checkpoint{}}
		history, errs := lincheck.Record([]offsets.Store{st}, lincheck.Workload{Seed: uint64(i), Shards: 2})
		if len(errs) > 0 {
			t.Fatalf("unexpected errors: %v", errs)
		}
		if result, _ := lincheck.Check(history); result == porcupine.Illegal {
			illegal++
		}
	}
	t.Logf("non-atomic store refused in %d of %d runs", illegal, runs)
	if illegal == 0 {
		t.Fatalf("the checker accepted a non-atomic store in all %d runs: it cannot tell a broken store from a correct one", runs)
	}
}
