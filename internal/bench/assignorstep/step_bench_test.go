package assignorstep

import (
	"testing"

	"github.com/shardlease/shardlease/rebalance"
)

// BenchmarkAssignorStep steps the states of the assignor-step scenario at
// the size of its goals (1,000 workers × 100,000 shards), for comparing
// two versions with benchstat; the scenario reports the percentiles.
func BenchmarkAssignorStep(b *testing.B) {
	cold, steady, join, leave, err := stepStates(1000, 100_000, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    rebalance.State
	}{{"cold", cold}, {"steady", steady}, {"join", join}, {"leave", leave}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rebalance.Step(c.s, rebalance.Policy{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
