package consul_test

import (
	"testing"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest"
)

// TestConformance runs the offsets suite against a real Consul agent, each
// case under a fresh prefix.
func TestConformance(t *testing.T) {
	offsetstest.Run(t, opener(consultest.StartDev(t)))
}

// TestDurable: checkpoints and floors live in Consul, not in the store:
// a new store on the same prefix sees them.
func TestDurable(t *testing.T) {
	a := consultest.StartDev(t)
	offsetstest.RunDurable(t, func(tb testing.TB) offsetstest.OpenFunc {
		prefix := freshPrefix()
		return func(tb testing.TB) offsets.Store { return newStore(tb, a, prefix) }
	})
}
