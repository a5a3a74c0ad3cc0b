package shard

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

// TestAssignmentValue: an assignment round-trips through its key's value,
// shards in config order as compact ranges; what cannot be read is refused
// with a message naming the fault, never a panic; a 10,000-shard fleet's
// assignment stays small.
func TestAssignmentValue(t *testing.T) {
	cfg := Config{Shards: 10000}
	ids := cfg.IDs()
	since := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	a := Assignment{Epoch: 42, Since: since, Shards: []ID{ids[7], ids[5], ids[6], ids[9000]}, Stuck: true, StuckSession: "s-1"}
	value, err := cfg.EncodeAssignment(a)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"shards":"5-7,9000"`; !strings.Contains(string(value), want) {
		t.Fatalf("value %s does not hold %s", value, want)
	}
	back, err := cfg.DecodeAssignment(value)
	if err != nil {
		t.Fatal(err)
	}
	if back.Epoch != 42 || !back.Since.Equal(since) || len(back.Shards) != 4 || back.Shards[0] != ids[5] || back.Shards[3] != ids[9000] ||
		!back.Stuck || back.StuckSession != "s-1" {
		t.Fatalf("round trip gave %+v", back)
	}

	// A worker's share of 10,000 shards among 100, scattered: small.
	var scattered []ID
	for i := 0; i < len(ids); i += 100 {
		scattered = append(scattered, ids[i])
	}
	if value, err := cfg.EncodeAssignment(Assignment{Epoch: 1, Shards: scattered}); err != nil || len(value) > 700 {
		t.Fatalf("100 scattered shards of 10,000: %d bytes, %v; want at most 700", len(value), err)
	}

	for _, tc := range []struct {
		shards  []ID
		wantErr error
	}{
		{[]ID{"stream/shard-10000"}, ErrUnknownShard},
		{[]ID{"other-001"}, ErrUnknownShard},
		{[]ID{ids[1], ids[1]}, ErrInvalidArgument},
	} {
		if _, err := cfg.EncodeAssignment(Assignment{Epoch: 1, Shards: tc.shards}); !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), string(tc.shards[0])) {
			t.Errorf("EncodeAssignment(%v) = %v, want %v naming the shard", tc.shards, err, tc.wantErr)
		}
	}

	for _, tc := range []struct{ value, want string }{
		{`not json`, "malformed assignment value"},
		{`{"epoch":"7"}`, "malformed assignment value"},
		{`null`, "no epoch"},
		{`{"shards":"1-2"}`, "no epoch"},
		{`{"epoch":3,"shards":"0-10000"}`, `"0-10000"`},
		{`{"epoch":3,"shards":"5,1"}`, `"5,1"`},
		{`{"epoch":3,"shards":"x"}`, `"x"`},
	} {
		if got, err := cfg.DecodeAssignment([]byte(tc.value)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeAssignment(%s) = %+v, %v; want an error saying %s", tc.value, got, err, tc.want)
		}
	}
	if got, err := cfg.DecodeAssignment([]byte(`{"epoch":3,"shards":""}`)); err != nil || len(got.Shards) != 0 || got.Epoch != 3 {
		t.Errorf("an empty set = %+v, %v", got, err)
	}
}

// TestAssignmentReasons: each free shard's reason round-trips typed (its
// kind is never read back out of the text); a key written with reasons as
// text keeps the text under an unknown kind; an unknown kind is refused
// by name.
func TestAssignmentReasons(t *testing.T) {
	cfg := Config{Shards: 16}
	ids := cfg.IDs()
	why := map[ID]MoveReason{
		ids[1]: {Kind: MoveInitial},
		ids[2]: {Kind: MoveInitial},
		ids[3]: {Kind: MoveRebalanced, From: "w2", Note: "drain"},
		ids[4]: {Kind: MoveOrphaned, From: "w7"},
		ids[5]: {Kind: MoveLoad, From: "w3"},
	}
	value, err := cfg.EncodeAssignment(Assignment{Epoch: 5, Shards: ids[1:6], Free: ids[1:6], Why: why})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := cfg.EncodeAssignment(Assignment{Epoch: 5, Shards: ids[1:6], Free: ids[1:6], Why: why})
	if string(again) != string(value) {
		t.Errorf("one assignment encoded two ways:\n%s\n%s", value, again)
	}
	back, err := cfg.DecodeAssignment(value)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range why {
		if back.Why[id] != want {
			t.Errorf("%s: reason %+v after the round trip, want %+v", id, back.Why[id], want)
		}
	}
	for r, text := range map[MoveReason]string{
		why[ids[1]]:                "initial: never owned",
		why[ids[3]]:                "rebalanced from w2 (drain)",
		why[ids[4]]:                "orphaned: w7's session invalidated",
		why[ids[5]]:                "load: from w3",
		{Note: "assignor epoch 5"}: "assigned (assignor epoch 5)",
	} {
		if r.String() != text {
			t.Errorf("%+v reads %q, want %q", r, r.String(), text)
		}
	}
	if got := []string{MoveAssigned.String(), MoveInitial.String(), MoveRebalanced.String(), MoveOrphaned.String(), MoveLoad.String()}; strings.Join(got, ",") != "assigned,initial,rebalanced,orphaned,load" {
		t.Errorf("metric labels %v", got)
	}

	legacy, err := cfg.DecodeAssignment([]byte(`{"epoch":3,"shards":"1-2","why":{"orphaned: w1's session invalidated":"1-2"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := legacy.Why[ids[2]]; r.Kind != MoveAssigned || r.Note != "orphaned: w1's session invalidated" {
		t.Errorf("a text reason decoded as %+v", r)
	}
	if _, err := cfg.DecodeAssignment([]byte(`{"epoch":3,"shards":"1","reasons":[{"kind":"teleported","shards":"1"}]}`)); err == nil || !strings.Contains(err.Error(), `"teleported"`) {
		t.Errorf("an unknown reason kind: %v", err)
	}
	if _, err := cfg.DecodeAssignment([]byte(`{"epoch":3,"shards":"1","reasons":[{"kind":"initial","shards":"99"}]}`)); err == nil || !strings.Contains(err.Error(), `"99"`) {
		t.Errorf("a reason for a shard outside the fleet: %v", err)
	}
}

// TestAssignmentLoadMemory: the assignor's memory for load balancing (the
// mode, when shards arrived, since when the worker is out of band)
// round-trips, arrivals grouped by time; a shard outside the config among
// the arrivals is refused.
func TestAssignmentLoadMemory(t *testing.T) {
	cfg := Config{Shards: 16}
	ids := cfg.IDs()
	t0 := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	a := Assignment{Epoch: 7, Shards: ids[:6], ByLoad: true, OutOfBand: t0.Add(-time.Minute),
		Arrived: map[ID]time.Time{ids[0]: t0, ids[1]: t0, ids[4]: t0.Add(time.Second)}}
	value, err := cfg.EncodeAssignment(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(value), `"shards":"0-1"`) {
		t.Errorf("arrivals not grouped by time: %s", value)
	}
	back, err := cfg.DecodeAssignment(value)
	if err != nil {
		t.Fatal(err)
	}
	if !back.ByLoad || !back.OutOfBand.Equal(a.OutOfBand) || !maps.EqualFunc(back.Arrived, a.Arrived, time.Time.Equal) {
		t.Errorf("round trip gave by_load %v, out_of_band %v, arrived %v; want %+v", back.ByLoad, back.OutOfBand, back.Arrived, a)
	}
	a.Arrived["nope"] = t0
	if _, err := cfg.EncodeAssignment(a); !errors.Is(err, ErrUnknownShard) {
		t.Errorf("an unknown shard among the arrivals: %v, want ErrUnknownShard", err)
	}
}
