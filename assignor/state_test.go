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

// TestZonesWaitForTheStep: members' zones reach the step only while every
// live member speaks shard.StepZones; a dead member without it does not
// hold them back.
func TestZonesWaitForTheStep(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := shard.Config{Shards: 4}.IDs()
	zoned := shard.Steps()
	snap := shard.Snapshot{Members: []shard.MemberState{
		{Member: shard.Member{ID: "a", Zone: "z1", Steps: zoned}, Session: "a#1"},
		{Member: shard.Member{ID: "b", Zone: "z2", Steps: zoned}, Session: "b#1"},
		{Member: shard.Member{ID: "old"}}, // dead
	}}
	zones := func() []string {
		st, _ := State(snap, shard.Config{Shards: 4}, ids, now)
		var zs []string
		for _, m := range st.Members {
			zs = append(zs, m.Zone)
		}
		return zs
	}
	if got := zones(); !slices.Equal(got, []string{"z1", "z2"}) {
		t.Errorf("every live member speaks zones: %q, want z1, z2", got)
	}
	snap.Members[2].Session = "old#1" // a live worker of a release without zones
	if got := zones(); !slices.Equal(got, []string{"", "", ""}) {
		t.Errorf("with a live member without the zones step: %q, want none", got)
	}
}

// TestRulesWaitForTheStep: the policy's rules are followed only while
// every live member speaks the rules step.
func TestRulesWaitForTheStep(t *testing.T) {
	p := shard.BalancePolicy{Rules: []shard.PlacementRule{{Shards: "*", Kind: shard.RuleAvoid, Labels: map[string]string{"disk": "hdd"}}}}
	snap := shard.Snapshot{Members: []shard.MemberState{
		{Member: shard.Member{ID: "a", Steps: shard.Steps()}, Session: "a#1"},
		{Member: shard.Member{ID: "old", Steps: []string{shard.StepGenerations, shard.StepHistory, shard.StepZones}}}, // not live
	}}
	if got := Rules(snap, p); len(got) != 1 {
		t.Errorf("every live member speaks rules: %v, want the policy's", got)
	}
	snap.Members[1].Session = "old#1"
	if got := Rules(snap, p); got != nil {
		t.Errorf("with a live member without the rules step: %v, want none", got)
	}
}

// TestStepStateStandbys: a member whose handler has a standby side runs
// standbys in the step, with its reports, only while every live member
// speaks shard.StepStandbys; a key's standbys are passed on either way
// (the step drops them when nobody may run them).
func TestStepStateStandbys(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := shard.Config{Shards: 4}
	ids := cfg.IDs()
	reports := map[shard.ID]shard.StandbyState{ids[1]: {Applied: 7, Ready: true}}
	snap := shard.Snapshot{
		Members: []shard.MemberState{
			{Member: shard.Member{ID: "a", Steps: shard.Steps(), StandbyCapable: true, Standby: reports}, Session: "a#1"},
			{Member: shard.Member{ID: "b", Steps: shard.Steps()}, Session: "b#1"},
		},
		Assignments: map[string]shard.Assignment{"a": {Shards: ids[:1], Standby: ids[1:2]}},
	}
	st, _ := State(snap, cfg, ids, now)
	if a, b := st.Members[0], st.Members[1]; !a.Standby || a.Standbys[ids[1]] != reports[ids[1]] || b.Standby {
		t.Errorf("every member speaks the step: a %+v, b %+v; want a running standbys with its report, b not", a, b)
	}
	if got := st.Assigned["a"].Standby; !slices.Equal(got, ids[1:2]) {
		t.Errorf("a's key's standbys in the state: %v, want %v", got, ids[1:2])
	}
	snap.Members = append(snap.Members, shard.MemberState{Member: shard.Member{ID: "old"}, Session: "old#1"}) // release 0.1.0
	st, _ = State(snap, cfg, ids, now)
	if st.Members[0].Standby {
		t.Errorf("with a 0.1.0 member live, a still runs standbys in the step")
	}
}
