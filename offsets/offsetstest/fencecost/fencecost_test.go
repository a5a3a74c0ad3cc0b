// Package fencecost holds only benchmarks: what the token check costs the
// two in-process backends, memory and bolt, against the same write without
// the check. (Consul's and PostgreSQL's are in their own packages, where
// their servers are at hand; all four are in docs/benchmarks.md.)
//
//	go test -run '^$' -bench FenceCost -count 5 ./offsets/offsetstest/fencecost
//
// Neither backend has a batch API, so there is no batched row.
package fencecost

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/bolt"
	"github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
)

func BenchmarkFenceCost(b *testing.B) {
	ctx := context.Background()
	b.Run("memory/commit", func(b *testing.B) {
		st := memory.New()
		defer st.Close()
		// The same map behind the same kind of lock, written blind.
		var mu sync.Mutex
		m := map[shard.ID]offsets.Checkpoint{}
		pair(b,
			func(i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) },
			func(i int64) error {
				mu.Lock()
				m["bench/unfenced"] = offsets.Checkpoint{Offset: i, Token: 1, Floor: 1}
				mu.Unlock()
				return nil
			})
	})
	b.Run("bolt/commit", func(b *testing.B) {
		dir := b.TempDir()
		st, err := bolt.Open(filepath.Join(dir, "offsets.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		// A second file on the same disk (the store holds its own file's
		// lock), written the way the store writes, without the read and
		// the check: one read-write transaction, one put, one fsync.
		db, err := bbolt.Open(filepath.Join(dir, "unfenced.db"), 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		bucket := []byte("offsets")
		if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
			b.Fatal(err)
		}
		pair(b,
			func(i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) },
			func(i int64) error {
				v := make([]byte, 25) // the store's record: version, offset, token, floor
				v[0] = 1
				binary.BigEndian.PutUint64(v[1:], uint64(i))
				binary.BigEndian.PutUint64(v[9:], 1)
				binary.BigEndian.PutUint64(v[17:], 1)
				return db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put([]byte("bench/unfenced"), v) })
			})
	})
}

// pair runs fenced and unfenced once per iteration, alternating the order,
// and reports commits/s for each and the fence's cost in percent of the
// unfenced time.
func pair(b *testing.B, fenced, unfenced func(i int64) error) {
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
	n := float64(b.N)
	b.ReportMetric(n/tf.Seconds(), "fenced-commits/s")
	b.ReportMetric(n/tu.Seconds(), "unfenced-commits/s")
	b.ReportMetric(100*(tf.Seconds()-tu.Seconds())/tu.Seconds(), "fence-%")
}
