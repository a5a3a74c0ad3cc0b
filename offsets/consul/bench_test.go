package consul_test

import (
	"testing"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/offsets/offsetstest/fencecost"
)

// BenchmarkFenceCost measures what the token check costs: the store's
// fenced commit (a CAS transaction on the key's ModifyIndex) against the
// same value written without any check (a plain KV put; for the batch, a
// transaction of plain sets), through the same client and agent, one at a
// time and in batches of 64. The pairs and their timing are fencecost's,
// which shardbench's commit-throughput scenario runs too.
//
//	go test -run '^$' -bench FenceCost -count 5 ./offsets/consul
//
// A third pair, commit-vs-txn-set, compares the fenced commit with a plain
// set through /v1/txn, to tell the check's cost from the endpoint's. The
// agent is a dev agent (in-memory Raft, one server): the floor under every
// cost here.
func BenchmarkFenceCost(b *testing.B) {
	a := consultest.StartDev(b)
	client := a.Client(b)
	st := newStore(b, a, freshPrefix())
	single, vsTxnSet, batched := fencecost.Consul(st, client)
	for _, p := range []fencecost.Pair{single, vsTxnSet, batched} {
		b.Run(p.Name, func(b *testing.B) { fencecost.Bench(b, p) })
	}

	// For reference: a Load (consistent read) costs about what a write
	// costs on a single-server dev agent.
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Load(b.Context(), "bench/fenced"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var _ offsets.Store = (*consul.Store)(nil)
