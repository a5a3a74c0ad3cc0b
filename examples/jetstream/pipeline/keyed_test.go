package pipeline

import (
	"slices"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// Every partition of every layout gets at least per keys, in ascending
// order, none twice.
func TestChooseKeysCoversEveryPartition(t *testing.T) {
	for _, tc := range []struct{ n, m, per int }{{64, 128, 2}, {16, 32, 1}, {64, 96, 3}, {128, 64, 2}, {1, 7, 4}, {5, 5, 1}} {
		from, to := Layout{First: 0, Count: tc.n}, Layout{First: tc.n, Count: tc.m}
		keys := ChooseKeys(tc.per, from, to)
		if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
			t.Errorf("%d → %d: keys not ascending and distinct: %v", tc.n, tc.m, keys)
		}
		for _, l := range []Layout{from, to} {
			have := map[int]int{}
			for _, k := range keys {
				if p := l.Of(k); !l.Contains(p) {
					t.Fatalf("%d → %d: key %d placed at %d, outside %+v", tc.n, tc.m, k, p, l)
				}
				have[l.Of(k)]++
			}
			for p := l.First; p <= l.Last(); p++ {
				if have[p] < tc.per {
					t.Errorf("%d → %d: partition %d has %d keys, want %d at least", tc.n, tc.m, p, have[p], tc.per)
				}
			}
		}
	}
}

// A key's partition after a switch is a child, under the fleet's lineage
// "mod", of its partition before: the reshard keeps every key in the
// family of shards that owned it, which is what lets a child wait for its
// parents alone.
func TestKeysMoveToAChildOfTheirParent(t *testing.T) {
	for _, tc := range []struct{ n, m int }{{64, 128}, {16, 32}, {64, 96}, {128, 64}, {6, 4}} {
		cfg := shard.Config{Shards: tc.n, Layouts: []shard.Layout{{Shards: tc.m, Name: "stream/shard.r1", Lineage: shard.LineageMod}}}
		parents, children := shard.Segment{Name: "stream/shard", Shards: tc.n}, shard.Segment{Name: "stream/shard.r1", Shards: tc.m}
		from, to := Layout{First: 0, Count: tc.n}, Layout{First: tc.n, Count: tc.m}
		for _, k := range ChooseKeys(2, from, to) {
			parent, child := parents.ID(from.Of(k)-from.First), children.ID(to.Of(k)-to.First)
			if ps := cfg.ParentsOf(child); !slices.Contains(ps, parent) {
				t.Fatalf("%d → %d: key %d moves from %s to %s, whose parents are %v", tc.n, tc.m, k, parent, child, ps)
			}
		}
	}
}
