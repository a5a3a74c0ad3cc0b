package etcd_test

import (
	"testing"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest"
	"github.com/shardlease/shardlease/offsets/offsetstest/lincheck"
)

// TestConformance runs the offsets suite against a real etcd member, each
// case under a fresh prefix.
func TestConformance(t *testing.T) {
	offsetstest.Run(t, opener(etcdtest.Start(t)))
}

// TestDurable: checkpoints and floors live in etcd, not in the store: a new
// store on the same prefix sees them.
func TestDurable(t *testing.T) {
	c := etcdtest.Start(t)
	offsetstest.RunDurable(t, func(tb testing.TB) offsetstest.OpenFunc {
		prefix := freshPrefix()
		return func(tb testing.TB) offsets.Store { return newStore(tb, c, prefix) }
	})
}

// TestLinearizable: clients of two stores on one prefix of a three-member
// cluster, each store with its own client, fence, commit and load with
// interleaved tokens; porcupine must find the history linearizable.
func TestLinearizable(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	prefix := freshPrefix()
	lincheck.Run(t, []offsets.Store{newStore(t, c, prefix), newStore(t, c, prefix)}, lincheck.Workload{Seed: 3})
}
