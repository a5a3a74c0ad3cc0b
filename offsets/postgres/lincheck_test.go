package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest/lincheck"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

// TestLinearizable: clients of two stores on one table (two workers, two
// pools) fence, commit and load with interleaved tokens; porcupine must find
// the history linearizable.
func TestLinearizable(t *testing.T) {
	dsn := database(t)
	lincheck.Run(t, []offsets.Store{openTable(t, dsn, "lin"), openTable(t, dsn, "lin")}, lincheck.Workload{Seed: 4})
}

// checkThenWrite is the store a hurried implementation would write: read
// the floor, decide in Go, then upsert without a condition. Between the two
// statements another writer can slip in, and its write is undone.
type checkThenWrite struct{ *postgres.Store }

func (c checkThenWrite) update(ctx context.Context, s shard.ID, apply func(offsets.Checkpoint) (offsets.Checkpoint, error)) error {
	cp, err := c.Load(ctx, s)
	if err != nil {
		return err
	}
	next, err := apply(cp)
	if err != nil {
		return err
	}
	_, err = c.Pool().Exec(ctx, `INSERT INTO `+c.Table()+` (shard, shard_offset, token, floor) VALUES ($1, $2, $3, $4)
		ON CONFLICT (shard) DO UPDATE SET shard_offset = excluded.shard_offset, token = excluded.token, floor = excluded.floor`,
		s, next.Offset, int64(next.Token), int64(next.Floor))
	return err
}

func (c checkThenWrite) Commit(ctx context.Context, s shard.ID, t shard.Token, off int64) error {
	return c.update(ctx, s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) { return offsets.ApplyCommit(cp, s, t, off) })
}

func (c checkThenWrite) Fence(ctx context.Context, s shard.ID, t shard.Token) error {
	return c.update(ctx, s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) { return offsets.ApplyFence(cp, s, t) })
}

// The same check on a real database refuses the check-then-write store in
// at least one of several runs: the linearizability test can fail.
func TestCatchesCheckThenWrite(t *testing.T) {
	dsn := database(t)
	const runs = 5
	illegal := 0
	for i := range runs {
		st := checkThenWrite{openTable(t, dsn, fmt.Sprintf("racy_%d", i))}
		history, errs := lincheck.Record([]offsets.Store{st}, lincheck.Workload{Seed: uint64(i), Shards: 2})
		if len(errs) > 0 {
			t.Fatalf("unexpected errors: %v", errs)
		}
		if result, _ := lincheck.Check(history); result == porcupine.Illegal {
			illegal++
		}
	}
	t.Logf("check-then-write store refused in %d of %d runs", illegal, runs)
	if illegal == 0 {
		t.Fatalf("the checker accepted a check-then-write store in all %d runs", runs)
	}
}
