package fleettest

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestCheckersCatchViolations proves the fleet tests' checks can fail: each
// bad history below must be reported, and the good one must not.
func TestCheckersCatchViolations(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const s = shard.ID("stream/shard-000")
	for _, tc := range []struct {
		name string
		ivs  []interval
		want string
	}{
		{"hand-off", []interval{{s, "a", 10, at(0), at(100)}, {s, "b", 12, at(150), at(300)}}, ""},
		{"overlap", []interval{{s, "a", 10, at(0), at(200)}, {s, "b", 12, at(150), at(300)}}, "two processes at once"},
		{"token back", []interval{{s, "a", 12, at(0), at(100)}, {s, "b", 10, at(150), at(300)}}, "started with token 10"},
		{"same token", []interval{{s, "a", 12, at(0), at(100)}, {s, "b", 12, at(150), at(300)}}, "started with token 12"},
	} {
		got := strings.Join(overlaps(map[shard.ID][]interval{s: tc.ivs}, nil), "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}

	snap := func(index uint64, sessions map[string]string, shards map[shard.ID]kvShard) fleetSnap {
		return fleetSnap{index: index, sessions: sessions, shards: shards, members: map[string]string{}}
	}
	live := map[string]string{"s1": "a", "s2": "b", "s3": "a"}
	for _, tc := range []struct {
		name  string
		snaps []fleetSnap
		want  string
	}{
		{"hand-off", []fleetSnap{
			snap(5, live, map[shard.ID]kvShard{s: {"s1", 5, "a"}}),
			snap(7, live, map[shard.ID]kvShard{s: {"", 6, "a"}}),
			snap(8, live, map[shard.ID]kvShard{s: {"s2", 8, "b"}}),
		}, ""},
		{"dead holder", []fleetSnap{snap(5, live, map[shard.ID]kvShard{s: {"s9", 5, "a"}})}, "which Consul does not have"},
		{"wrong owner", []fleetSnap{snap(5, live, map[shard.ID]kvShard{s: {"s1", 5, "b"}})}, `names owner "b"`},
		{"token back", []fleetSnap{
			snap(5, live, map[shard.ID]kvShard{s: {"s1", 5, "a"}}),
			snap(6, live, map[shard.ID]kvShard{s: {"s1", 4, "a"}}),
		}, "went back"},
		{"new holder same token", []fleetSnap{
			snap(5, live, map[shard.ID]kvShard{s: {"s1", 5, "a"}}),
			snap(6, live, map[shard.ID]kvShard{s: {"s2", 5, "b"}}),
		}, "not above"},
		{"two sessions of one worker", []fleetSnap{
			snap(5, live, map[shard.ID]kvShard{s: {"s1", 5, "a"}, "stream/shard-001": {"s3", 5, "a"}}),
		}, "2 live sessions"},
	} {
		m := &monitor{tokens: map[shard.ID]uint64{}, holder: map[shard.ID]string{}}
		for _, sn := range tc.snaps {
			m.check(sn)
		}
		got := strings.Join(m.violations, "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
}
