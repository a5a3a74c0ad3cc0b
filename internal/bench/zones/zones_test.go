package zones

import (
	"fmt"
	"testing"

	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
)

// TestOffShare: how far the zone furthest from its capacity's share is,
// over the live members only.
func TestOffShare(t *testing.T) {
	f := &zoneFleet{size: fleet.Size{Workers: 4, Shards: 12}, zone: map[string]string{"w1": "a", "w2": "a", "w3": "b", "w4": "c"}}
	owners := func(counts map[string]int) map[string]string {
		out := map[string]string{}
		i := 0
		for w, n := range counts {
			for range n {
				out[fmt.Sprint(i)] = w
				i++
			}
		}
		return out
	}
	for _, tc := range []struct {
		members []string
		held    map[string]int
		want    float64
	}{
		{[]string{"w1", "w2", "w3", "w4"}, map[string]int{"w1": 3, "w2": 3, "w3": 3, "w4": 3}, 0},
		{[]string{"w1", "w2", "w3", "w4"}, map[string]int{"w1": 4, "w2": 4, "w3": 2, "w4": 2}, 2}, // a holds 8 of its 6
		{[]string{"w1", "w2", "w3"}, map[string]int{"w1": 4, "w2": 4, "w3": 4}, 0},                // c gone: a 8 of 8, b 4 of 4
		{[]string{"w1", "w2", "w3"}, map[string]int{"w1": 3, "w2": 3, "w3": 6}, 2},
	} {
		if got := f.offShare(procfleet.View{Owners: owners(tc.held), Members: tc.members}); got != tc.want {
			t.Errorf("members %v holding %v: off by %v, want %v", tc.members, tc.held, got, tc.want)
		}
	}
}
