package fleetkeys

import (
	"encoding/json"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// smallListing is a fleet of one worker holding and assigned both of two
// shards, its member key written with address, and its decoder.
func smallListing(t *testing.T, address string) ([]*Pair, *Decoder) {
	t.Helper()
	layout := NewLayout("memo")
	d := NewDecoder(layout, func(key string, _ []byte) string { return "put " + key })
	cfg, value, err := ConfigValue(shard.Config{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	d.SetFleet(cfg)
	member, _ := json.Marshal(shard.Member{ID: "w1", Weight: 1, Address: address, Labels: map[string]string{"rack": "a"}})
	sealed, err := SealAssignments(d.Fleet(), layout.Config(), shard.Token(5), map[string]*shard.Assignment{"w1": {Shards: cfg.IDs(), Memory: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return []*Pair{
		{Key: layout.Assign("w1"), Value: sealed[0].Value, Index: 3},
		{Key: layout.Memory("w1"), Value: sealed[0].Memory, Index: 3},
		{Key: layout.Config(), Value: value, Index: 1},
		{Key: layout.Member("w1"), Value: member, Index: 2, Session: "s1"},
	}, d
}

// TestDecodeSameIndexNewValue: a key written again at an index it had
// before (a coordinator restored from a snapshot, or rebuilt) with another
// value decodes to the new value, not the one decoded before.
func TestDecodeSameIndexNewValue(t *testing.T) {
	pairs, d := smallListing(t, "old:1")
	if got := d.Decode(pairs, 3).Members[0].Address; got != "old:1" {
		t.Fatalf("first listing: address %q, want old:1", got)
	}
	again, _ := smallListing(t, "new:2")
	if got := d.Decode(again, 3).Members[0].Address; got != "new:2" {
		t.Errorf("the member key rewritten at the same index: address %q, want new:2", got)
	}
}

// TestDecodeSnapshotsAreTheCallers: changing a snapshot's assignment or
// member changes nothing in the next listing's snapshot.
func TestDecodeSnapshotsAreTheCallers(t *testing.T) {
	pairs, d := smallListing(t, "a:1")
	first := d.Decode(pairs, 3)
	a, ok := first.Assignments["w1"]
	if !ok || len(a.Shards) != 2 || len(first.Members) != 1 {
		t.Fatalf("first listing: assignment %+v (ok %v), %d members; problems %q", a, ok, len(first.Members), first.Problems)
	}
	a.Shards[0] = "changed"
	first.Members[0].Labels["rack"] = "changed"
	next := d.Decode(pairs, 3)
	if got := next.Assignments["w1"].Shards[0]; got == "changed" {
		t.Error("a change to one snapshot's assignment shows in the next")
	}
	if got := next.Members[0].Labels["rack"]; got != "a" {
		t.Errorf("the next snapshot's member label is %q, want a", got)
	}
}
