package worker

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestAssignorLoadMemory: the assignor reads back from the keys what the
// step must remember for load balancing (arrivals, the out-of-band mark),
// and a shard a worker released for load is placed as a load move, so its
// new owner's acquisition and lock say "load".
func TestAssignorLoadMemory(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ids := shard.Config{Shards: 4}.IDs()
	snap := shard.Snapshot{
		Assignments: map[string]shard.Assignment{"w1": {Shards: ids[:2], ByLoad: true,
			Arrived: map[shard.ID]time.Time{ids[1]: now}, OutOfBand: now.Add(-time.Minute)}},
		Shards: []shard.ShardState{
			{Shard: ids[2], Token: 9, Owner: shard.Owner{Worker: "w2", Released: shard.ReleasedForLoad}},
			{Shard: ids[3], Token: 8, Owner: shard.Owner{Worker: "w2", Released: "drain"}},
		},
	}
	st := stepState(snap, ids, now)
	a := st.Assigned["w1"]
	if !a.Arrived[ids[1]].Equal(now) || len(a.Arrived) != 1 || !a.OutOfBand.Equal(now.Add(-time.Minute)) {
		t.Errorf("the step reads arrived %v, out of band %v; want the key's", a.Arrived, a.OutOfBand)
	}
	why := whyFree(snap, ids[2:])
	if r := why[ids[2]]; r.Kind != shard.MoveLoad || r.From != "w2" || r.String() != "load: from w2" {
		t.Errorf("a shard released for load is placed as %+v (%q)", r, r.String())
	}
	if r := why[ids[3]]; r.Kind != shard.MoveRebalanced {
		t.Errorf("a shard released for a drain is placed as %+v", r)
	}
}
