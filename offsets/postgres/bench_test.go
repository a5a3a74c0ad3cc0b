package postgres_test

import (
	"testing"

	"github.com/shardlease/shardlease/offsets/offsetstest/fencecost"
)

// BenchmarkFenceCost measures what the token check costs: the store's
// fenced commit against the same write without the check, on the same
// table, pool and server, one at a time and in batches of 64 (the pairs
// and their timing are fencecost's, which shardbench's commit-throughput
// scenario runs too).
//
//	go test -run '^$' -bench FenceCost -count 5 ./offsets/postgres
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
	single, batched := fencecost.Postgres(openTable(b, dsn, "bench"))
	for _, p := range []fencecost.Pair{single, batched} {
		b.Run(p.Name, func(b *testing.B) { fencecost.Bench(b, p) })
	}
}
