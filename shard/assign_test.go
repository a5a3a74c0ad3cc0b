package shard

import (
	"errors"
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
