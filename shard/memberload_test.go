package shard_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestMemberLoadJSON: a member record round-trips with its loads, and a
// record written before load balancing (no "load") reads with none.
func TestMemberLoadJSON(t *testing.T) {
	m := shard.Member{ID: "w1", Weight: 2, Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Load: map[shard.ID]float64{"stream/shard-000": 12.5, "stream/shard-007": 0.0123}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back shard.Member
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip of %s: %+v, want %+v", b, back, m)
	}
	old := `{"id":"w1","address":"10.0.0.1:7070","weight":1,"started":"2026-11-01T00:00:00Z","draining":true}`
	var o shard.Member
	if err := json.Unmarshal([]byte(old), &o); err != nil {
		t.Fatalf("an old record: %v", err)
	}
	if o.Load != nil || !o.Draining || o.Weight != 1 {
		t.Fatalf("old record read as %+v, want no load, draining, weight 1", o)
	}
	b, _ = json.Marshal(shard.Member{ID: "w2", Weight: 1})
	if string(b) != `{"id":"w2","weight":1,"started":"0001-01-01T00:00:00Z"}` {
		t.Fatalf("a record without loads is written as %s: want no load field, as before", b)
	}
}

func TestMemberLoads(t *testing.T) {
	snap := shard.Snapshot{
		Members: []shard.MemberState{
			{Member: shard.Member{ID: "a", Weight: 1, Load: map[shard.ID]float64{"s0": 6, "s1": 2}}, Session: "sa"},
			{Member: shard.Member{ID: "b", Weight: 2, Load: map[shard.ID]float64{"s0": 99}}, Session: "sb"},
			{Member: shard.Member{ID: "dead", Weight: 1, Load: map[shard.ID]float64{"s3": 7}}},
		},
		Shards: []shard.ShardState{{Shard: "s0", Session: "sa"}, {Shard: "s1", Session: "sa"}, {Shard: "s2", Session: "sb"}, {Shard: "s3"}},
	}
	loads := snap.ShardLoads()
	if !reflect.DeepEqual(loads, map[shard.ID]float64{"s0": 6, "s1": 2}) {
		t.Fatalf("ShardLoads = %v: want only the holders' figures for the shards they hold", loads)
	}
	got := snap.MemberLoads(loads)
	want := []shard.MemberLoad{{Member: "a", Load: 8, Capacity: 1, Shards: 2, Measured: 2}, {Member: "b", Load: 4, Capacity: 2, Shards: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MemberLoads = %+v, want %+v (b's unmeasured s2 counts as the mean, 4)", got, want)
	}
	lo, hi, ok := shard.LoadSpread(snap, loads)
	// mean = 12 / 3 = 4 per unit; a: 8/1/4 = 2, b: 4/2/4 = 0.5.
	if !ok || lo != 0.5 || hi != 2 {
		t.Fatalf("LoadSpread = %v %v %v, want 0.5 2 true", lo, hi, ok)
	}
	if _, _, ok := shard.LoadSpread(shard.Snapshot{}, nil); ok {
		t.Fatalf("LoadSpread of an empty fleet is ok")
	}
}

// TestShardLoadsIgnoresBadFigures: a loads key edited by hand can hold a
// negative figure, which EncodeLoad never writes; ShardLoads leaves it
// out (the shard counts as the mean), since rebalance.Step refuses a state
// with a negative load and one bad key would stop the assignor's every step.
func TestShardLoadsIgnoresBadFigures(t *testing.T) {
	snap := shard.Snapshot{
		Members: []shard.MemberState{{Member: shard.Member{ID: "a", Weight: 1, Load: map[shard.ID]float64{"s0": -3, "s1": 2}}, Session: "sa"}},
		Shards:  []shard.ShardState{{Shard: "s0", Session: "sa"}, {Shard: "s1", Session: "sa"}},
	}
	if loads := snap.ShardLoads(); !reflect.DeepEqual(loads, map[shard.ID]float64{"s1": 2}) {
		t.Fatalf("ShardLoads = %v, want the negative figure left out", loads)
	}
}
