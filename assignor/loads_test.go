package assignor

import (
	"math"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// snapWith is a snapshot of live members a and b, a holding s-000 and
// s-001, b holding s-002, with the given member loads.
func snapWith(aLoad, bLoad map[shard.ID]float64) shard.Snapshot {
	return shard.Snapshot{
		Members: []shard.MemberState{
			{Member: shard.Member{ID: "a", Weight: 1, Load: aLoad}, Session: "sa"},
			{Member: shard.Member{ID: "b", Weight: 1, Load: bLoad}, Session: "sb"},
		},
		Shards: []shard.ShardState{{Shard: "s-000", Session: "sa"}, {Shard: "s-001", Session: "sa"}, {Shard: "s-002", Session: "sb"}},
	}
}

var fourShards = []shard.ID{"s-000", "s-001", "s-002", "s-003"}

func TestLoadsOf(t *testing.T) {
	t.Run("nothing measured: equal loads", func(t *testing.T) {
		var l loads
		got := l.of(snapWith(nil, nil), fourShards)
		if len(got) != 4 || got["s-000"] != 1 || got["s-003"] != 1 {
			t.Fatalf("loads = %v, want 1 for each of the 4 shards", got)
		}
	})
	t.Run("nothing measured: the weights", func(t *testing.T) {
		l := loads{weight: func(id shard.ID) float64 { return map[shard.ID]float64{"s-001": 3}[id] + 1 }}
		got := l.of(snapWith(nil, nil), fourShards)
		if got["s-000"] != 1 || got["s-001"] != 4 || len(got) != 4 {
			t.Fatalf("loads = %v, want the weights", got)
		}
	})
	t.Run("holder's figure times weight; unknown left out", func(t *testing.T) {
		l := loads{weight: func(shard.ID) float64 { return 2 }}
		// a lists s-002, which b holds: not a's to say.
		got := l.of(snapWith(map[shard.ID]float64{"s-000": 5, "s-002": 100}, map[shard.ID]float64{"s-002": 1, "s-003": -4}), fourShards)
		if len(got) != 2 || got["s-000"] != 10 || got["s-002"] != 2 {
			t.Fatalf("loads = %v, want s-000 10 and s-002 2", got)
		}
	})
	t.Run("a moved shard keeps its last figure", func(t *testing.T) {
		var l loads
		l.of(snapWith(map[shard.ID]float64{"s-000": 50, "s-001": 1}, map[shard.ID]float64{"s-002": 1}), fourShards)
		moved := snapWith(map[shard.ID]float64{"s-001": 1}, map[shard.ID]float64{"s-002": 1})
		moved.Shards[0].Session = "sb" // s-000 now on b, not yet measured there
		if got := l.of(moved, fourShards); got["s-000"] != 50 {
			t.Fatalf("s-000 right after its move: %v, want its last figure 50", got["s-000"])
		}
	})
}

// TestSpread: the fleet's spread of load per capacity, as the assignor
// exports it: 60 over 2 workers, a 40 → 4/3, b 20 → 2/3.
func TestSpread(t *testing.T) {
	lo, hi, ok := spread(snapWith(nil, nil), map[shard.ID]float64{"s-000": 30, "s-001": 10, "s-002": 20})
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if !ok || !near(hi, 4.0/3) || !near(lo, 2.0/3) {
		t.Fatalf("spread = %v, %v, %v; want 2/3 and 4/3", lo, hi, ok)
	}
	if _, _, ok := spread(shard.Snapshot{}, nil); ok {
		t.Fatalf("the spread of an empty fleet is ok")
	}
}
