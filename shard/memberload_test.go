package shard_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestMemberLoadJSON: a member record round-trips with its loads, and a
// record written before load balancing (no "load") reads with none.
func TestMemberLoadJSON(t *testing.T) {
	m := shard.Member{ID: "w1", Weight: 2, Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Load: map[shard.ID]float64{"stream/shard-000": 12.5, "stream/shard-007": 0.0123}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back shard.Member
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip of %s: %+v, want %+v", b, back, m)
	}
	old := `{"id":"w1","address":"10.0.0.1:7070","weight":1,"started":"2026-11-01T00:00:00Z","draining":true}`
	var o shard.Member
	if err := json.Unmarshal([]byte(old), &o); err != nil {
		t.Fatalf("an old record: %v", err)
	}
	if o.Load != nil || !o.Draining || o.Weight != 1 {
		t.Fatalf("old record read as %+v, want no load, draining, weight 1", o)
	}
	b, _ = json.Marshal(shard.Member{ID: "w2", Weight: 1})
	if string(b) != `{"id":"w2","weight":1,"started":"0001-01-01T00:00:00Z"}` {
		t.Fatalf("a record without loads is written as %s: want no load field, as before", b)
	}
}
