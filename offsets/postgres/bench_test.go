package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

// batchSize is the entries per batch in BenchmarkFenceCost, the same for
// every backend so their rows compare.
const batchSize = 64

// BenchmarkFenceCost measures what the token check costs: the store's
// fenced commit against the same write without the check, on the same
// table, pool and server, one at a time and in batches of 64.
//
//	go test -run '^$' -bench FenceCost -count 5 ./offsets/postgres
//
// The unfenced write is what a store without fencing would send: the same
// upsert with no WHERE (and, for the batch, no RETURNING). Every iteration
// makes one fenced and one unfenced write, alternating which goes first,
// and times each, so that the drift of a shared machine (fsync latency
// above all) falls on both alike; the metrics are each side's commits/s
// and the fence's cost in percent of the unfenced time.
//
// It runs twice: "durable" with the server's defaults (every commit waits
// for its WAL flush, so the disk's fsync time dominates), and "async" with
// synchronous_commit=off for the benchmark's connections, which leaves the
// statements' own cost (planning, the WHERE, the round trip) to compare.
func BenchmarkFenceCost(b *testing.B) {
	dsn := database(b)
	b.Run("durable", func(b *testing.B) { fenceCost(b, dsn) })
	b.Run("async", func(b *testing.B) { fenceCost(b, dsn+"&synchronous_commit=off") })
}

func fenceCost(b *testing.B, dsn string) {
	st := openTable(b, dsn, "bench")
	ctx := context.Background()
	plain := fmt.Sprintf(`INSERT INTO %s AS o (shard, shard_offset, token, floor, updated_at) VALUES ($1, $2, $3, $3, now())
		ON CONFLICT (shard) DO UPDATE SET shard_offset = excluded.shard_offset, token = excluded.token, floor = excluded.floor, updated_at = excluded.updated_at`, st.Table())
	plainBatch := fmt.Sprintf(`INSERT INTO %s AS o (shard, shard_offset, token, floor, updated_at)
		SELECT b.shard, b.off, b.tok, b.tok, now() FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS b(shard, off, tok)
		ORDER BY b.shard
		ON CONFLICT (shard) DO UPDATE SET shard_offset = excluded.shard_offset, token = excluded.token, floor = excluded.floor, updated_at = excluded.updated_at`, st.Table())

	b.Run("commit", func(b *testing.B) {
		pair(b, 1,
			func(i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) },
			func(i int64) error { _, err := st.Pool().Exec(ctx, plain, "bench/unfenced", i, int64(1)); return err })
	})

	entries := make([]postgres.Entry, batchSize)
	shards := make([]string, batchSize)
	offs := make([]int64, batchSize)
	toks := make([]int64, batchSize)
	for k := range entries {
		entries[k] = postgres.Entry{Shard: shard.ID(fmt.Sprintf("bench/fenced-%03d", k)), Token: 1}
		shards[k], toks[k] = fmt.Sprintf("bench/unfenced-%03d", k), 1
	}
	b.Run(fmt.Sprintf("batch%d", batchSize), func(b *testing.B) {
		pair(b, batchSize,
			func(i int64) error {
				for k := range entries {
					entries[k].Offset = i
				}
				return st.CommitBatch(ctx, entries)
			},
			func(i int64) error {
				for k := range offs {
					offs[k] = i
				}
				_, err := st.Pool().Exec(ctx, plainBatch, shards, offs, toks)
				return err
			})
	})
}

// pair runs fenced and unfenced once per iteration, alternating the order,
// and reports commits/s for each (perOp commits per call) and the fence's
// cost: (fenced time - unfenced time) / unfenced time, in percent.
func pair(b *testing.B, perOp int, fenced, unfenced func(i int64) error) {
	var tf, tu time.Duration
	timed := func(f func(int64) error, i int64, into *time.Duration) {
		start := time.Now()
		if err := f(i); err != nil {
			b.Fatal(err)
		}
		*into += time.Since(start)
	}
	for i := int64(0); b.Loop(); i++ {
		if i%2 == 0 {
			timed(fenced, i, &tf)
			timed(unfenced, i, &tu)
		} else {
			timed(unfenced, i, &tu)
			timed(fenced, i, &tf)
		}
	}
	n := float64(b.N * perOp)
	b.ReportMetric(n/tf.Seconds(), "fenced-commits/s")
	b.ReportMetric(n/tu.Seconds(), "unfenced-commits/s")
	b.ReportMetric(100*(tf.Seconds()-tu.Seconds())/tu.Seconds(), "fence-%")
}
