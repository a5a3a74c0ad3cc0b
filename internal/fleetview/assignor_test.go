package fleetview

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/shard"
)

// withAssignor: a is the assignor; a is assigned 0 and 3 (it owns 0 and
// 1: it hands 1 off and has not yet taken 3), b (draining) nothing, and a
// key for c, dead, carries a stuck mark about c's old session.
func withAssignor() shard.Snapshot {
	s := fixture()
	s.Assignor = shard.LockKey{Index: 8, Session: "s-a", Token: 8, Owner: shard.Owner{Worker: "a", Since: t0.Add(8 * time.Second)}}
	s.Assignments = map[string]shard.Assignment{
		"a": {Epoch: 8, Shards: []shard.ID{"stream/shard-000", "stream/shard-003"}, Memory: assignor.Memory{Since: t0.Add(9 * time.Second)}.Encode()},
		"b": {Epoch: 8, Memory: assignor.Memory{Since: t0}.Encode()},
		"c": {Epoch: 8, Memory: assignor.Memory{Since: t0, Stuck: true, StuckSession: "s-c-old"}.Encode()},
	}
	return s
}

func TestBuildShowsTheAssignorAndAssignments(t *testing.T) {
	f := Build(Input{Snapshot: withAssignor(), Now: t0})
	want := Assignor{Held: true, Worker: "a", Session: "s-a", Epoch: 8, Since: t0.Add(8 * time.Second)}
	if f.Assignor != want {
		t.Errorf("assignor %+v, want %+v", f.Assignor, want)
	}
	for _, tc := range []struct {
		id              string
		owned, assigned int
		stuck           bool
		since           time.Time
	}{{"a", 2, 2, false, t0.Add(9 * time.Second)}, {"b", 1, 0, false, t0}, {"c", 0, 0, false, t0}} {
		w, _ := f.Worker(tc.id)
		if w.Shards != tc.owned || w.Assigned != tc.assigned || w.Stuck != tc.stuck || !w.AssignedSince.Equal(tc.since) || w.AssignedEpoch != 8 {
			t.Errorf("worker %s = %+v, want owned %d, assigned %d since %v, stuck %v", tc.id, w, tc.owned, tc.assigned, tc.since, tc.stuck)
		}
	}
	for id, who := range map[shard.ID]string{"stream/shard-000": "a", "stream/shard-001": "", "stream/shard-003": "a"} {
		if s, _ := f.Shard(id); s.Assigned != who {
			t.Errorf("%s assigned to %q, want %q", id, s.Assigned, who)
		}
	}

	// Moves pending are the assignor's, read from the keys: a hands 1
	// off, b (draining, given nothing) hands 2 off, and 3 is free,
	// assigned to a, not yet taken.
	if got, want := f.Summary, (Summary{HandOffs: 2, Placements: 1, PendingMoves: 3}); got.HandOffs != want.HandOffs ||
		got.Placements != want.Placements || got.PendingMoves != want.PendingMoves {
		t.Errorf("pending %d (hand-offs %d, placements %d), want %d (%d, %d)",
			got.PendingMoves, got.HandOffs, got.Placements, want.PendingMoves, want.HandOffs, want.Placements)
	}

	// The stuck mark shows only for the session it is about.
	s := withAssignor()
	s.Assignments["a"] = shard.Assignment{Epoch: 8, Shards: []shard.ID{"stream/shard-003"}, Memory: assignor.Memory{Stuck: true, StuckSession: "s-a"}.Encode()}
	if w, _ := Build(Input{Snapshot: s}).Worker("a"); !w.Stuck {
		t.Errorf("a stuck under its current session shows %+v", w)
	}
	s.Assignments["a"] = shard.Assignment{Epoch: 8, Memory: assignor.Memory{Stuck: true, StuckSession: "s-a-before-restart"}.Encode()}
	if w, _ := Build(Input{Snapshot: s}).Worker("a"); w.Stuck {
		t.Errorf("a stuck mark about an earlier session shows: %+v", w)
	}
	// A verdict that ended: on probation, not stuck.
	s.Assignments["a"] = shard.Assignment{Epoch: 8, Memory: assignor.Memory{Verdicts: 1, StuckSince: t0, StuckSession: "s-a"}.Encode()}
	if w, _ := Build(Input{Snapshot: s}).Worker("a"); w.Stuck || !w.Probation {
		t.Errorf("a worker on probation shows %+v", w)
	}

	// No assignor and no keys: not held, and the JSON says so; nothing
	// is pending, since nothing was decided (a worker with no readable
	// key keeps what it runs).
	f = Build(Input{Snapshot: fixture()})
	if f.Assignor.Held || f.Assignor.Worker != "" {
		t.Errorf("no P/assignor gave %+v", f.Assignor)
	}
	if f.Summary.PendingMoves != 0 {
		t.Errorf("with no assignment keys, %d moves pending, want 0", f.Summary.PendingMoves)
	}
	b, _ := json.Marshal(f)
	for _, field := range []string{`"assignor":{"held":false}`, `"assigned":0`, `"summary":`, `"workers":`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("fleet JSON lacks %s: %s", field, b)
		}
	}
}

func TestDiffReportsAssignorChanges(t *testing.T) {
	a := withAssignor()
	b := withAssignor()
	b.Index = 20
	b.Assignor = shard.LockKey{Index: 20, Session: "s-b", Token: 20, Owner: shard.Owner{Worker: "b"}}
	again := withAssignor()
	again.Index = 30
	again.Assignor.Token = 30 // the key was written by hand: the holder campaigned again
	free := withAssignor()
	free.Index = 15
	free.Assignor = shard.LockKey{}
	for _, tc := range []struct {
		name       string
		prev, next shard.Snapshot
		want       string
	}{
		{"hand-over", a, b, "assignor b elected (epoch 20): took the assignor lock, after a"},
		{"freed", a, free, "assignor a vacated (epoch 8): the lock is free (it resigned, or its session ended); the next candidate takes it"},
		{"first", free, a, "assignor a elected (epoch 8): took the assignor lock"},
		{"re-elected", a, again, "assignor a elected (epoch 30): took the assignor lock again (its epoch was 8)"},
		{"unchanged", a, a, ""},
	} {
		var got []string
		for _, e := range Diff(&tc.prev, tc.next, t0) {
			got = append(got, e.String())
		}
		if strings.Join(got, "\n") != tc.want {
			t.Errorf("%s: Diff gave %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPlacementsPending: a placement is pending for a shard no live worker
// holds that the assignor gave to a live worker — free, or still locked by
// a dead session for its lock-delay — and not for a shard only a dead
// worker's key lists (the assignor deletes that key).
func TestPlacementsPending(t *testing.T) {
	orphaned := withAssignor()
	orphaned.Shards[2].Session = "s-dead" // 002: locked by a session no member has
	orphaned.Assignments["a"] = shard.Assignment{Epoch: 8, Shards: []shard.ID{"stream/shard-000", "stream/shard-001", "stream/shard-002"}}
	deadKey := withAssignor()
	deadKey.Assignments["a"] = shard.Assignment{Epoch: 8, Shards: []shard.ID{"stream/shard-000", "stream/shard-001"}}
	deadKey.Assignments["c"] = shard.Assignment{Epoch: 8, Shards: []shard.ID{"stream/shard-003"}} // free, in dead c's key only
	for _, tc := range []struct {
		name string
		s    shard.Snapshot
		want int
	}{{"orphaned shard given to a live worker", orphaned, 1}, {"free shard only in a dead worker's key", deadKey, 0}} {
		if got := Build(Input{Snapshot: tc.s}).Summary.Placements; got != tc.want {
			t.Errorf("%s: %d placements pending, want %d", tc.name, got, tc.want)
		}
	}
}
