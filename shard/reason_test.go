package shard_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// TestReasonNames: every reason has a name that parses back to it, an
// unknown name reads as ReasonUnknown (a later release's reason still
// reads), and a reason travels in JSON by its name.
func TestReasonNames(t *testing.T) {
	var got []string
	for r := range shard.ReasonClosed + 2 {
		got = append(got, r.String())
		if back, ok := shard.ParseReason(r.String()); r <= shard.ReasonClosed && (!ok || back != r) {
			t.Errorf("ParseReason(%q) = %v, %v; want %v", r.String(), back, ok, r)
		}
	}
	want := []string{"unknown", "initial", "free", "orphaned", "stuck", "rebalance", "drain", "load", "operator", "shutdown", "lost", "closed", "Reason(12)"}
	if !slices.Equal(got, want) {
		t.Errorf("reasons %v, want %v", got, want)
	}
	if r, ok := shard.ParseReason("teleport"); ok || r != shard.ReasonUnknown {
		t.Errorf("ParseReason of an unknown name = %v, %v", r, ok)
	}
	b, err := json.Marshal(shard.Owner{Worker: "w1", Why: shard.Why{Reason: shard.ReasonLoad, From: "w3"}, Released: shard.ReasonDrain})
	if err != nil {
		t.Fatal(err)
	}
	var o shard.Owner
	if err := json.Unmarshal(b, &o); err != nil || o.Reason != shard.ReasonLoad || o.From != "w3" || o.Released != shard.ReasonDrain {
		t.Fatalf("%s read back as %+v (%v)", b, o, err)
	}
	if err := json.Unmarshal([]byte(`{"worker":"w1","reason":"teleport"}`), &o); err != nil || o.Reason != shard.ReasonUnknown {
		t.Fatalf("an unknown reason read as %+v (%v), want ReasonUnknown", o, err)
	}
}

// TestWhyStrings: a move in one phrase, its reason's name first.
func TestWhyStrings(t *testing.T) {
	for _, tc := range []struct {
		why  shard.Why
		want string
	}{
		{shard.Why{Reason: shard.ReasonInitial}, "initial: never owned"},
		{shard.Why{Reason: shard.ReasonOrphaned, From: "w7"}, "orphaned: w7's session invalidated"},
		{shard.Why{Reason: shard.ReasonLoad, From: "w3"}, "load: from w3"},
		{shard.Why{Reason: shard.ReasonStuck}, "stuck"},
	} {
		if got := tc.why.String(); got != tc.want {
			t.Errorf("%+v = %q, want %q", tc.why, got, tc.want)
		}
	}
}
