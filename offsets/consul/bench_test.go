package consul_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consultest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/shard"
)

// batchSize is the entries per batch in BenchmarkFenceCost, the same for
// every backend so their rows compare.
const batchSize = 64

// BenchmarkFenceCost measures what the token check costs: the store's
// fenced commit (a CAS transaction on the key's ModifyIndex) against the
// same value written without any check (a plain KV put; for the batch, a
// transaction of plain sets), through the same client and agent, one at a
// time and in batches of 64.
//
//	go test -run '^$' -bench FenceCost -count 5 ./offsets/consul
//
// A third pair, commit-vs-txn-set, compares the fenced commit with a plain
// set through /v1/txn, to tell the check's cost from the endpoint's.
//
// Every iteration makes one fenced and one unfenced write, alternating which
// goes first, and times each, so that the drift of a shared machine falls
// on both alike; the metrics are each side's commits/s and the fence's cost
// in percent of the unfenced time. The agent is a dev agent (in-memory
// Raft, one server): the floor under every cost here.
func BenchmarkFenceCost(b *testing.B) {
	a := consultest.StartDev(b)
	st := newStore(b, a, freshPrefix())
	kv := a.Client(b).KV()
	ctx := context.Background()
	value := func(i int64) []byte {
		return []byte(fmt.Sprintf(`{"v":1,"offset":%d,"token":1,"floor":1}`, i)) // what the store writes
	}

	b.Run("commit", func(b *testing.B) {
		key := st.Key("bench/unfenced")
		pair(b, 1,
			func(i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) },
			func(i int64) error {
				_, err := kv.Put(&api.KVPair{Key: key, Value: value(i)}, (&api.WriteOptions{}).WithContext(ctx))
				return err
			})
	})

	// The same fenced commit against a plain set sent through /v1/txn, the
	// endpoint the CAS needs (it alone answers with the new ModifyIndex):
	// this splits the cost above into the check itself and the endpoint.
	txn := a.Client(b).Txn()
	b.Run("commit-vs-txn-set", func(b *testing.B) {
		key := st.Key("bench/txn-set")
		pair(b, 1,
			func(i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) },
			func(i int64) error {
				ops := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: value(i)}}}
				ok, resp, _, err := txn.Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
				if err == nil && !ok {
					err = fmt.Errorf("txn rolled back: %v", resp.Errors)
				}
				return err
			})
	})

	entries := make([]consul.Entry, batchSize)
	keys := make([]string, batchSize)
	for k := range entries {
		entries[k] = consul.Entry{Shard: shard.ID(fmt.Sprintf("bench/fenced-%03d", k)), Token: 1}
		keys[k] = st.Key(shard.ID(fmt.Sprintf("bench/unfenced-%03d", k)))
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
				ops := make(api.TxnOps, len(keys))
				for k, key := range keys {
					ops[k] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: value(i)}}
				}
				ok, resp, _, err := txn.Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
				if err == nil && !ok {
					err = fmt.Errorf("txn rolled back: %v", resp.Errors)
				}
				return err
			})
	})

	// For reference: a Load (consistent read) costs about what a write
	// costs on a single-server dev agent.
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Load(ctx, "bench/fenced"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var _ offsets.Store = (*consul.Store)(nil)

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
