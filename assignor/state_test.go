package assignor

import (
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestStepStateHoldersBySession: the assignor's State names, beside each
// of the fleet's shards, the live member whose current session holds its
// lock: not a lock still held by a member's previous session, not a free
// lock, not a shard without a lock, and a lock of a shard outside the
// fleet shifts nothing.
func TestStepStateHoldersBySession(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := shard.Config{Shards: 7}.IDs()
	snap := shard.Snapshot{
		Members: []shard.MemberState{
			{Member: shard.Member{ID: "a"}, Session: "a#2"},
			{Member: shard.Member{ID: "b"}, Session: "b#1"},
			{Member: shard.Member{ID: "gone"}},
		},
		Shards: []shard.ShardState{ // sorted by ID, as a snapshot's are
			{Shard: "a-stray", Session: "a#2"},
			{Shard: ids[0], Session: "a#2"},
			{Shard: ids[1], Session: "a#1"},    // a's previous session
			{Shard: ids[2], Session: "gone#1"}, // a member that is not live
			{Shard: ids[3] + "0", Session: "b#1"},
			{Shard: ids[5], Session: "b#1"},
			{Shard: ids[6]}, // free
			{Shard: ids[6] + "0", Session: "b#1"},
		},
	}
	st, _ := State(snap, shard.Config{Shards: 7}, ids, now)
	if want := []string{"a", "", "", "", "", "b", ""}; !slices.Equal(st.Holders, want) {
		t.Errorf("holders %q, want %q", st.Holders, want)
	}
}
