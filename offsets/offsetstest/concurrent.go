package offsetstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest/history"
	"github.com/shardlease/shardlease/shard"
)

// The concurrent workload: goroutines × opsEach fences and commits on a few
// shards. Tokens follow the shared sequence, so they rise with the run
// whatever the scheduling, with a spread that makes neighbouring operations
// race with higher and lower tokens; now and then one offers an old token,
// as an owner waking from a pause would.
const (
	goroutines = 16
	opsEach    = 200
	shardsHot  = 4
	tokenEvery = 64 // sequence steps (two per operation) per token
	spread     = 6
	pauseAge   = 10 // how many tokens old a woken owner's token is

	maxReported = 20 // a broken store breaks the rule thousands of times
)

func testConcurrent(t *testing.T, st offsets.Store) {
	n := opsEach
	if testing.Short() {
		n = 50
	}
	ids := make([]shard.ID, shardsHot)
	for i := range ids {
		ids[i] = shard.ID(fmt.Sprintf("hot/shard-%03d", i))
	}

	var seq atomic.Uint64
	histories := make([][]history.Op, goroutines)
	start := make(chan struct{}) // so the goroutines overlap from the first operation
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			<-start
			histories[g] = workload(st, &seq, g, n, ids)
		})
	}
	close(start)
	wg.Wait()

	var ops []history.Op
	for _, h := range histories {
		ops = append(ops, h...)
	}
	final := map[shard.ID]offsets.Checkpoint{}
	for _, id := range ids {
		cp, err := st.Load(context.Background(), id)
		if err != nil {
			t.Fatalf("Load(%q): %v", id, err)
		}
		final[id] = cp
	}
	problems := history.Check(ops, final)
	for i, p := range problems {
		if i == maxReported {
			t.Errorf("… and %d more problems", len(problems)-i)
			break
		}
		t.Error(p)
	}

	// A workload that never raced proves nothing: make sure it did.
	var accepted, rejected int
	for _, o := range ops {
		if o.Err == nil {
			accepted++
		} else {
			rejected++
		}
	}
	t.Logf("%d operations: %d accepted, %d rejected as stale", len(ops), accepted, rejected)
	if accepted == 0 || rejected == 0 {
		t.Errorf("degenerate workload: %d accepted, %d rejected", accepted, rejected)
	}
}

// workload runs one goroutine's operations and returns what it saw. It
// reports nothing itself (no t.Fatal off the test goroutine); history.Check
// judges the result.
func workload(st offsets.Store, seq *atomic.Uint64, g, n int, ids []shard.ID) []history.Op {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(g), 0x5eed))
	ops := make([]history.Op, 0, n)
	for i := range n {
		o := history.Op{
			Shard:  ids[rng.IntN(len(ids))],
			Fence:  rng.IntN(4) == 0,
			Offset: int64(g*n + i + 1), // unique, so the final offset names its writer
		}
		tok := seq.Load()/tokenEvery + rng.Uint64N(spread) + 1
		if rng.IntN(8) == 0 && tok > pauseAge {
			tok -= pauseAge
		}
		o.Token = shard.Token(tok)
		o.Start = seq.Add(1)
		if o.Fence {
			o.Err = st.Fence(ctx, o.Shard, o.Token)
		} else {
			o.Err = st.Commit(ctx, o.Shard, o.Token, o.Offset)
		}
		o.End = seq.Add(1)
		ops = append(ops, o)
	}
	return ops
}
