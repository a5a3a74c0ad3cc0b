package postgres_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

// A batch checks each entry against its own shard's floor: stale entries
// are refused (and named), the rest committed, in one statement.
func TestCommitBatch(t *testing.T) {
	st := openTable(t, database(t), "batch")
	ctx := t.Context()
	if err := st.Fence(ctx, "b", 10); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, "c", 5, 50); err != nil {
		t.Fatal(err)
	}
	err := st.CommitBatch(ctx, []postgres.Entry{
		{Shard: "a", Token: 1, Offset: 11},  // new shard
		{Shard: "b", Token: 9, Offset: 12},  // stale: floor 10
		{Shard: "c", Token: 5, Offset: 13},  // equal token overwrites
		{Shard: "d", Token: 2, Offset: 14},  // new shard
		{Shard: "b2", Token: 10, Offset: 1}, // a prefix-alike, independent
	})
	var be *postgres.BatchError
	if !errors.As(err, &be) || !errors.Is(err, offsets.ErrStaleToken) {
		t.Fatalf("CommitBatch = %v; want a *BatchError wrapping ErrStaleToken", err)
	}
	t.Logf("error: %v", err)
	for i, e := range be.Errs {
		if (e != nil) != (i == 1) {
			t.Errorf("entry %d: %v", i, e)
		}
	}
	var stale *offsets.StaleTokenError
	if !errors.As(be.Errs[1], &stale) || stale.Floor != 10 || stale.Token != 9 || stale.Shard != "b" {
		t.Errorf("entry 1: %v; want shard b token 9 below floor 10", be.Errs[1])
	}
	want := map[shard.ID]offsets.Checkpoint{
		"a": {Offset: 11, Token: 1, Floor: 1}, "b": {Floor: 10}, "c": {Offset: 13, Token: 5, Floor: 5},
		"d": {Offset: 14, Token: 2, Floor: 2}, "b2": {Offset: 1, Token: 10, Floor: 10},
	}
	for id, w := range want {
		if cp, err := st.Load(ctx, id); err != nil || cp != w {
			t.Errorf("Load(%s) = %+v, %v; want %+v", id, cp, err, w)
		}
	}
	if err := st.CommitBatch(ctx, nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}

// A large batch, all accepted, then all stale.
func TestCommitBatchLarge(t *testing.T) {
	st := openTable(t, database(t), "batch_large")
	ctx := t.Context()
	batch := make([]postgres.Entry, 1000)
	for i := range batch {
		batch[i] = postgres.Entry{Shard: shard.ID(fmt.Sprintf("stream/shard-%04d", i)), Token: 3, Offset: int64(i)}
	}
	if err := st.CommitBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		batch[i].Token = 2
	}
	var be *postgres.BatchError
	if err := st.CommitBatch(ctx, batch); !errors.As(err, &be) || len(be.Unwrap()) != len(batch) {
		t.Fatalf("all-stale batch: %v", err)
	}
	if cp, err := st.Load(ctx, "stream/shard-0999"); err != nil || cp != (offsets.Checkpoint{Offset: 999, Token: 3, Floor: 3}) {
		t.Fatalf("Load = %+v, %v", cp, err)
	}
}
