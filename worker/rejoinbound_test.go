package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/shard"
)

// TestRejoinUntilIsBounded: the assignor keeps a stopped worker's shards
// for a RejoinUntil within MaxRejoinGrace (and a minute of clock skew), and
// ignores one further ahead, as a member key edited by hand would carry;
// a worker may not ask for a longer grace.
func TestRejoinUntilIsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	snap := shard.Snapshot{Members: []shard.MemberState{
		{Member: shard.Member{ID: "back-soon", RejoinUntil: now.Add(30 * time.Second)}},
		{Member: shard.Member{ID: "edge", RejoinUntil: now.Add(MaxRejoinGrace + time.Minute)}},
		{Member: shard.Member{ID: "hand-edited", RejoinUntil: now.AddDate(100, 0, 0)}},
	}}
	cfg := shard.Config{Shards: 4}
	st, _ := assignor.State(snap, cfg, cfg.IDs(), now)
	for id, want := range map[string]bool{"back-soon": true, "edge": true, "hand-edited": false} {
		if _, got := st.Returning[id]; got != want {
			t.Errorf("%s returning = %v, want %v", id, got, want)
		}
	}
	wcfg := Config{RejoinGrace: MaxRejoinGrace + time.Second}
	if err := wcfg.ValidateSettings(); err == nil || !strings.Contains(err.Error(), "rejoin grace 10m1s") {
		t.Errorf("a grace past MaxRejoinGrace: %v, want an error naming it", err)
	}
}
