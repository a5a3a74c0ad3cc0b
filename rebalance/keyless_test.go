package rebalance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestKeylessHolderGetsAKey: a live member that holds shards but has no
// assignment key (deleted by hand, or by a stale delete that landed after
// it rejoined) is given one, in count and in load balance: its worker keeps
// what it runs and starts nothing until its key is written, so a step that
// wrote nothing for it would wait for its "hand-offs" for ever (found by
// the simulation, seed 415). A member that may keep its shards keeps them
// (no move); a draining one is given a key without them, so it releases.
func TestKeylessHolderGetsAKey(t *testing.T) {
	now := time.Unix(1000, 0)
	var ids []shard.ID
	loads := map[shard.ID]float64{}
	for i := range 12 {
		ids = append(ids, shard.ID(fmt.Sprintf("s-%03d", i)))
		loads[ids[i]] = 1
	}
	loads["s-000"] = 5
	holders := make([]string, 12)
	assigned := map[string]Assignment{}
	var ofA []shard.ID
	for i, id := range ids {
		w := []string{"a", "b", "c"}[i%3]
		holders[i] = w
		if w == "a" {
			ofA = append(ofA, id)
			continue // a's key is gone
		}
		a := assigned[w]
		a.Shards = append(a.Shards, id)
		a.Since = now.Add(-time.Minute)
		assigned[w] = a
	}
	for _, tc := range []struct {
		name     string
		loads    map[shard.ID]float64
		draining bool
		want     []shard.ID
	}{
		{"count", nil, false, ofA},
		{"load", loads, false, ofA},
		{"count, draining", nil, true, nil},
		{"load, draining", loads, true, nil},
	} {
		s := State{Now: now, Shards: ids, Holders: holders, Assigned: assigned, Loads: tc.loads,
			Members: []Member{{ID: "a", Weight: 1, Session: "sa", Draining: tc.draining}, {ID: "b", Weight: 1, Session: "sb"}, {ID: "c", Weight: 1, Session: "sc"}}}
		d, err := Step(s, Policy{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		key, ok := d.Assign["a"]
		if !ok {
			t.Errorf("%s: no key written for live member a, which holds %d shards and has none", tc.name, len(ofA))
			continue
		}
		if !slices.Equal(key.Shards, tc.want) {
			t.Errorf("%s: a's new key lists %v, want %v", tc.name, key.Shards, tc.want)
		}
	}
}
