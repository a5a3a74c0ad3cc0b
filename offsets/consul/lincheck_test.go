package consul_test

import (
	"testing"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest/lincheck"
)

// TestLinearizable: clients of two stores on one prefix (two workers, each
// with its own memory of indexes) fence, commit and load with interleaved
// tokens; porcupine must find the history linearizable.
func TestLinearizable(t *testing.T) {
	a := consultest.StartDev(t)
	prefix := freshPrefix()
	lincheck.Run(t, []offsets.Store{newStore(t, a, prefix), newStore(t, a, prefix)}, lincheck.Workload{Seed: 3})
}
