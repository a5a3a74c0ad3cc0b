package fleetview

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func member(id string, session shard.SessionID, draining bool) shard.MemberState {
	return shard.MemberState{Member: shard.Member{ID: id, Version: "v1", Weight: 1, Started: t0, Draining: draining}, Session: session}
}

func held(id shard.ID, session shard.SessionID, token shard.Token, worker string, why shard.Why) shard.ShardState {
	return shard.ShardState{Shard: id, Session: session, Token: token, Owner: shard.Owner{Worker: worker, Why: why, Since: t0.Add(time.Duration(token) * time.Second)}}
}

var (
	initial   = shard.Why{Reason: shard.ReasonInitial}
	fromC     = shard.Why{Reason: shard.ReasonShutdown, From: "c"}
	orphanedC = shard.Why{Reason: shard.ReasonOrphaned, From: "c"}
)

// fixture: four shards; a owns 0 and 1, b (draining) owns 2, 3 was
// released by c, which is dead.
func fixture() shard.Snapshot {
	cfg := shard.Config{Shards: 4}.Normalize()
	free := held("stream/shard-003", "", 9, "c", initial)
	free.Owner.Released = shard.ReasonShutdown
	return shard.Snapshot{Index: 10, Config: &cfg,
		Members: []shard.MemberState{member("a", "s-a", false), member("b", "s-b", true), member("c", "", false)},
		Shards: []shard.ShardState{
			held("stream/shard-000", "s-a", 3, "a", initial),
			held("stream/shard-001", "s-a", 7, "a", fromC),
			held("stream/shard-002", "s-b", 5, "b", orphanedC),
			free,
		}}
}

func TestBuild(t *testing.T) {
	cps := map[shard.ID]offsets.Checkpoint{"stream/shard-000": {Offset: 90, Token: 3, Floor: 3}}
	f := Build(Input{Name: "orders", Snapshot: fixture(), Offsets: cps, Heads: map[shard.ID]int64{"stream/shard-000": 100, "stream/shard-001": 100}, Now: t0})

	want := Summary{Shards: 4, Owned: 3, Free: 1, Live: 2, Draining: 1, Dead: 1, Imbalance: 0}
	got := f.Summary
	got.MaxLag = nil
	if got != want {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	if f.Summary.MaxLag == nil || *f.Summary.MaxLag != 100 {
		t.Errorf("max lag %v, want 100 (shard-001 has committed nothing)", f.Summary.MaxLag)
	}
	for _, tc := range []struct {
		id                shard.ID
		state, owner, why string
		token             shard.Token
		offset, lag       int64
	}{
		{"stream/shard-000", ShardOwned, "a", "initial: never owned", 3, 90, 10},
		{"stream/shard-001", ShardOwned, "a", "shutdown: from c", 7, 0, 100},
		{"stream/shard-002", ShardOwned, "b", "orphaned: c's session invalidated", 5, 0, -1},
		{"stream/shard-003", ShardFree, "c", "released by c: shutdown", 9, 0, -1},
	} {
		s, ok := f.Shard(tc.id)
		if !ok {
			t.Fatalf("%s missing", tc.id)
		}
		if s.State != tc.state || s.Owner != tc.owner || s.Why != tc.why || s.Token != tc.token || *s.Offset != tc.offset {
			t.Errorf("%s = %+v, want %+v", tc.id, s, tc)
		}
		if (tc.lag < 0) != (s.Lag == nil) || (s.Lag != nil && *s.Lag != tc.lag) {
			t.Errorf("%s lag = %v, want %d (-1: unknown)", tc.id, s.Lag, tc.lag)
		}
	}
	for _, tc := range []struct {
		id, state string
		shards    int
	}{{"a", WorkerLive, 2}, {"b", WorkerDraining, 1}, {"c", WorkerDead, 0}} {
		w, ok := f.Worker(tc.id)
		if !ok || w.State != tc.state || w.Shards != tc.shards {
			t.Errorf("worker %s = %+v, want %s with %d shards", tc.id, w, tc.state, tc.shards)
		}
	}
	if len(f.Events) != 3 || f.Events[0].Shard != "stream/shard-001" {
		t.Errorf("events %+v: want the three acquisitions recorded in held keys, newest first", f.Events)
	}
}

// TestHistoryBehind: a held shard whose token is below the store's floor
// is behind (its fences are refused); a held one at or above it, and a
// free one whatever its floor, are not; without offsets nothing is.
func TestHistoryBehind(t *testing.T) {
	cps := map[shard.ID]offsets.Checkpoint{
		"stream/shard-000": {Floor: 1_000_000}, // held at 3
		"stream/shard-001": {Floor: 7},         // held at 7
		"stream/shard-003": {Floor: 1_000_000}, // free
	}
	f := Build(Input{Name: "orders", Snapshot: fixture(), Offsets: cps, Now: t0})
	if len(f.HistoryBehind) != 1 || f.HistoryBehind[0] != "stream/shard-000" {
		t.Errorf("history behind %v, want [stream/shard-000]", f.HistoryBehind)
	}
	if f := Build(Input{Name: "orders", Snapshot: fixture(), Now: t0}); f.HistoryBehind != nil {
		t.Errorf("history behind without offsets %v, want none", f.HistoryBehind)
	}
}

func TestBuildWithoutAFleet(t *testing.T) {
	f := Build(Input{Name: "typo", Snapshot: shard.Snapshot{Index: 1}, Now: t0})
	if f.Exists() || len(f.Shards) != 0 || len(f.Workers) != 0 || f.Summary.Imbalance != 0 {
		t.Errorf("empty snapshot gave %+v", f)
	}
}

func TestImbalanceIgnoresDrainingWorkers(t *testing.T) {
	s := fixture()
	s.Members[1].Draining = false // b counts again: a 2, b 1
	if got := Build(Input{Snapshot: s}).Summary.Imbalance; got != 1 {
		t.Errorf("imbalance %d, want 1", got)
	}
	s.Members[0].Draining, s.Members[1].Draining = true, true // every live worker drains: count them all
	if got := Build(Input{Snapshot: s}).Summary.Imbalance; got != 1 {
		t.Errorf("imbalance with every worker draining %d, want 1", got)
	}
}

func TestDiff(t *testing.T) {
	prev := fixture()
	next := fixture()
	next.Index = 20
	// a releases 0 for a drain; b's session ends holding 2; d joins and
	// takes 3 (released earlier by c); b... is gone; a starts draining.
	released := prev.Shards[0].Owner // a release keeps the rest of the value
	released.Released = shard.ReasonDrain
	next.Shards[0] = shard.ShardState{Shard: "stream/shard-000", Token: 11, Owner: released}
	next.Shards[2] = shard.ShardState{Shard: "stream/shard-002", Token: 5, Owner: prev.Shards[2].Owner}
	next.Shards[3] = held("stream/shard-003", "s-d", 12, "d", fromC)
	next.Members = []shard.MemberState{member("a", "s-a", true), member("b", "", true), member("c", "", false), member("d", "s-d", false)}

	at := t0.Add(time.Minute)
	got := Diff(&prev, next, at)
	want := []string{
		"stream/shard-000 ← a released: drain",
		"stream/shard-002 ← b expired: b's session ended without releasing it",
		"stream/shard-003 → d from c (token 12): shutdown: from c",
		"worker a draining: an operator asked it to hand off every shard",
		"worker b left: session ended holding 1 shards (crash, partition, or a pause past the TTL)",
		"worker d joined: new session s-d, version v1",
	}
	if len(got) != len(want) {
		t.Fatalf("Diff gave %d events, want %d:\n%v", len(got), len(want), got)
	}
	for i, e := range got {
		if e.String() != want[i] || !e.At.Equal(at) || e.Index != 20 {
			t.Errorf("event %d = %q at %v index %d, want %q", i, e, e.At, e.Index, want[i])
		}
	}
	if Diff(nil, next, at) != nil || len(Diff(&next, next, at)) != 0 {
		t.Errorf("a first or unchanged snapshot gave events")
	}
}

func TestTracker(t *testing.T) {
	tr := NewTracker(4)
	s := fixture()
	if evs := tr.Observe(s, t0); evs != nil {
		t.Fatalf("first snapshot gave events %v", evs)
	}
	if r := tr.Recent(10); len(r) != 3 || r[0].Kind != Acquired {
		t.Fatalf("seeded recent events %v, want the 3 recorded acquisitions", r)
	}
	next := fixture()
	next.Index = 11
	next.Shards[3] = held("stream/shard-003", "s-a", 11, "a", fromC)
	evs := tr.Observe(next, t0.Add(time.Second))
	if len(evs) != 1 || evs[0].Shard != "stream/shard-003" || evs[0].Worker != "a" || evs[0].From != "c" {
		t.Fatalf("events %v", evs)
	}
	if r := tr.Recent(10); len(r) != 4 || r[0] != evs[0] {
		t.Fatalf("recent %v: want 4 (the limit), newest first", r)
	}
	// A reset coordinator (index backwards) starts over.
	reset := fixture()
	reset.Index = 2
	if evs := tr.Observe(reset, t0); evs != nil {
		t.Fatalf("a reset gave events %v", evs)
	}
}

// TestFollow: snapshots with a moving index reach fn; errors go to
// onError, which decides; ErrStop ends Follow cleanly.
func TestFollow(t *testing.T) {
	c := memory.New()
	ctx := context.Background()
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 2}); err != nil {
		t.Fatal(err)
	}
	sid, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	err = Follow(ctx, c.Fleet().Watch, func(s shard.Snapshot) error {
		seen = append(seen, s.Index)
		if len(seen) == 1 {
			go c.Members().Join(ctx, sid, shard.Member{ID: "a"})
			return nil
		}
		return ErrStop
	}, nil)
	if err != nil || len(seen) != 2 || seen[1] <= seen[0] {
		t.Fatalf("Follow = %v, saw indexes %v", err, seen)
	}

	boom := errors.New("boom")
	calls := 0
	err = Follow(ctx, failing{boom}.Watch, func(shard.Snapshot) error { return nil }, func(err error) bool {
		calls++
		return calls < 3
	})
	if !errors.Is(err, boom) || calls != 3 {
		t.Fatalf("Follow on a failing coordinator = %v after %d calls, want boom after 3", err, calls)
	}
	if err := Follow(ctx, c.Fleet().Watch, func(shard.Snapshot) error { return boom }, nil); !errors.Is(err, boom) {
		t.Fatalf("fn's error: Follow = %v", err)
	}
}

type failing struct{ err error }

func (f failing) Watch(context.Context, uint64) (shard.Snapshot, error) {
	return shard.Snapshot{}, f.err
}

func TestEventStrings(t *testing.T) {
	e := Event{Kind: Acquired, Shard: "s-1", Worker: "a", From: "a", Token: 4, Reason: "adopted"}
	if s := e.String(); strings.Contains(s, "from") {
		t.Errorf("re-acquisition by the same worker names a from: %q", s)
	}
}

// TestVersionsOfAMixedFleet: the live workers are counted by release and
// protocol (a 0.1.0 member key names no protocol: 3); dead ones are not; a
// fleet with two is mixed.
func TestVersionsOfAMixedFleet(t *testing.T) {
	s := fixture() // a and b live on v1 (keys without a protocol), c dead
	f := Build(Input{Snapshot: s})
	if want := []Version{{Release: "v1", Protocol: 3, Workers: 2}}; len(f.Versions) != 1 || f.Versions[0] != want[0] || f.Mixed() {
		t.Fatalf("versions %+v, mixed %v; want %+v", f.Versions, f.Mixed(), want)
	}
	s.Members[1].Version, s.Members[1].Protocol = "0.2.0-dev+abc1234", 3
	s.Members[2].Version = "v9" // dead: not counted
	f = Build(Input{Snapshot: s})
	want := []Version{{Release: "0.2.0-dev+abc1234", Protocol: 3, Workers: 1}, {Release: "v1", Protocol: 3, Workers: 1}}
	if len(f.Versions) != 2 || f.Versions[0] != want[0] || f.Versions[1] != want[1] || !f.Mixed() {
		t.Errorf("versions %+v, mixed %v; want %+v", f.Versions, f.Mixed(), want)
	}
}
