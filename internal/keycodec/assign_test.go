package keycodec

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// TestAssignmentValue: an assignment round-trips through its key's value,
// shards in config order as compact ranges; what cannot be read is refused
// with a message naming the fault, never a panic; a 10,000-shard fleet's
// assignment stays small.
func TestAssignmentValue(t *testing.T) {
	cfg := shard.Config{Shards: 10000}
	ids := cfg.IDs()
	a := shard.Assignment{Epoch: 42, Shards: []shard.ID{ids[7], ids[5], ids[6], ids[9000]}, Free: []shard.ID{ids[6]}, AsOf: 12, Memory: []byte("not in the value")}
	value, err := EncodeAssignment(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"shards":"5-7,9000"`; !strings.Contains(string(value), want) {
		t.Fatalf("value %s does not hold %s", value, want)
	}
	back, err := DecodeAssignment(cfg, value)
	if err != nil {
		t.Fatal(err)
	}
	if back.Epoch != 42 || len(back.Shards) != 4 || back.Shards[0] != ids[5] || back.Shards[3] != ids[9000] ||
		len(back.Free) != 1 || back.Free[0] != ids[6] || back.AsOf != 12 || back.Memory != nil {
		t.Fatalf("round trip gave %+v", back)
	}
	if strings.Contains(string(value), "not in the value") {
		t.Fatalf("the assignor's memory was encoded into the worker's key: %s", value)
	}

	// A worker's share of 10,000 shards among 100, scattered: small.
	var scattered []shard.ID
	for i := 0; i < len(ids); i += 100 {
		scattered = append(scattered, ids[i])
	}
	if value, err := EncodeAssignment(cfg, shard.Assignment{Epoch: 1, Shards: scattered}); err != nil || len(value) > 700 {
		t.Fatalf("100 scattered shards of 10,000: %d bytes, %v; want at most 700", len(value), err)
	}

	for _, tc := range []struct {
		shards  []shard.ID
		wantErr error
	}{
		{[]shard.ID{"stream/shard-10000"}, shard.ErrUnknownShard},
		{[]shard.ID{"other-001"}, shard.ErrUnknownShard},
		{[]shard.ID{ids[1], ids[1]}, shard.ErrInvalidArgument},
	} {
		if _, err := EncodeAssignment(cfg, shard.Assignment{Epoch: 1, Shards: tc.shards}); !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), string(tc.shards[0])) {
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
		if got, err := DecodeAssignment(cfg, []byte(tc.value)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeAssignment(%s) = %+v, %v; want an error saying %s", tc.value, got, err, tc.want)
		}
	}
	if got, err := DecodeAssignment(cfg, []byte(`{"epoch":3,"shards":""}`)); err != nil || len(got.Shards) != 0 || got.Epoch != 3 {
		t.Errorf("an empty set = %+v, %v", got, err)
	}
}

// TestAssignmentReasons: why each free shard was given and why each held
// one is taken round-trip typed, grouped by reason and source; a key
// encodes one way; an unknown reason name reads as shard.ReasonUnknown; a
// reason for a shard outside the fleet is refused.
func TestAssignmentReasons(t *testing.T) {
	cfg := shard.Config{Shards: 16}
	ids := cfg.IDs()
	why := map[shard.ID]shard.Why{
		ids[1]: {Reason: shard.ReasonInitial},
		ids[2]: {Reason: shard.ReasonInitial},
		ids[3]: {Reason: shard.ReasonDrain, From: "w2"},
		ids[4]: {Reason: shard.ReasonOrphaned, From: "w7"},
		ids[5]: {Reason: shard.ReasonLoad, From: "w3"},
	}
	release := map[shard.ID]shard.Why{ids[9]: {Reason: shard.ReasonLoad}, ids[10]: {Reason: shard.ReasonRebalance}}
	a := shard.Assignment{Epoch: 5, Shards: ids[1:6], Free: ids[1:6], Why: why, Release: release}
	value, err := EncodeAssignment(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := EncodeAssignment(cfg, a)
	if string(again) != string(value) {
		t.Errorf("one assignment encoded two ways:\n%s\n%s", value, again)
	}
	back, err := DecodeAssignment(cfg, value)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(back.Why, why) || !maps.Equal(back.Release, release) {
		t.Errorf("round trip: why %v release %v, want %v and %v", back.Why, back.Release, why, release)
	}
	unknown, err := DecodeAssignment(cfg, []byte(`{"epoch":3,"shards":"1","why":[{"reason":"teleported","shards":"1"}]}`))
	if err != nil || unknown.Why[ids[1]].Reason != shard.ReasonUnknown {
		t.Errorf("an unknown reason name: %+v, %v; want it read as unknown", unknown.Why, err)
	}
	if _, err := DecodeAssignment(cfg, []byte(`{"epoch":3,"shards":"1","release":[{"reason":"load","shards":"99"}]}`)); err == nil || !strings.Contains(err.Error(), `"99"`) {
		t.Errorf("a reason for a shard outside the fleet: %v", err)
	}
}

// TestAssignmentStandby: the standby shards round-trip as a set of their
// own (a field release 0.1.0's decoder skips: its value type lacks it),
// and a bad set is refused naming it.
func TestAssignmentStandby(t *testing.T) {
	cfg := shard.Config{Shards: 100}
	ids := cfg.IDs()
	value, err := EncodeAssignment(cfg, shard.Assignment{Epoch: 3, Shards: []shard.ID{ids[1]}, Standby: []shard.ID{ids[9], ids[8], ids[40]}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"standby":"8-9,40"`; !strings.Contains(string(value), want) {
		t.Fatalf("value %s does not hold %s", value, want)
	}
	back, err := DecodeAssignment(cfg, value)
	if err != nil || !slices.Equal(back.Standby, []shard.ID{ids[8], ids[9], ids[40]}) || !slices.Equal(back.Shards, []shard.ID{ids[1]}) {
		t.Fatalf("round trip gave %+v, %v", back, err)
	}
	var old struct { // release 0.1.0's assignment value
		Epoch  shard.Token `json:"epoch"`
		Shards string      `json:"shards"`
	}
	if err := json.Unmarshal(value, &old); err != nil || old.Shards != "1" {
		t.Fatalf("0.1.0's decoder reads %+v, %v", old, err)
	}
	if _, err := DecodeAssignment(cfg, []byte(`{"epoch":3,"shards":"","standby":"5,1"}`)); err == nil || !strings.Contains(err.Error(), `standby shards "5,1"`) {
		t.Errorf("a bad standby set read as %v", err)
	}
}

// TestAssignmentDuringAReshard: parents and children encode in the fleet's
// index space (the children after every earlier layout), the shards to
// close round-trip, and an assignment written before a layout was added
// reads the same after it.
func TestAssignmentDuringAReshard(t *testing.T) {
	before := shard.Config{Shards: 4, Name: "p"}
	old, err := EncodeAssignment(before, shard.Assignment{Epoch: 2, Shards: []shard.ID{"p-001", "p-003"}})
	if err != nil {
		t.Fatal(err)
	}
	during := shard.Config{Shards: 4, Name: "p", Protocol: shard.ProtocolResharded,
		Layouts: []shard.Layout{{Shards: 8, Name: "c", Lineage: shard.LineageMod}}}
	a := shard.Assignment{Epoch: 3, Shards: []shard.ID{"c-007", "p-001", "p-003"}, Close: []shard.ID{"p-003"}}
	value, err := EncodeAssignment(during, a)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"shards":"1,3,11","close":"3"`; !strings.Contains(string(value), want) {
		t.Fatalf("value %s does not hold %s", value, want)
	}
	back, err := DecodeAssignment(during, value)
	if err != nil || !slices.Equal(back.Shards, []shard.ID{"p-001", "p-003", "c-007"}) || !slices.Equal(back.Close, []shard.ID{"p-003"}) {
		t.Fatalf("round trip gave %+v, %v", back, err)
	}
	if back, err := DecodeAssignment(during, old); err != nil || !slices.Equal(back.Shards, []shard.ID{"p-001", "p-003"}) {
		t.Fatalf("a key written before the reshard reads as %+v, %v", back, err)
	}
	if _, err := DecodeAssignment(before, value); !errors.Is(err, shard.ErrUnknownShard) {
		t.Fatalf("a key naming children read against the config before the reshard = %v, want ErrUnknownShard (the reader reads the config again)", err)
	}
}
