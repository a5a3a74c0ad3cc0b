package fleetkeys

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// TestDecodeAdoptsAReshardAndReportsALostOne: a coordinator running a
// fleet adopts a stored config a reshard rewrote (its listing shows the
// children, the parents' keys are no problem), and reports, without
// adopting it, a stored config that lacks reshards it ran (a P/config
// lost and written again from the first shard set, or restored): workers
// starting on it would run retired shards.
func TestDecodeAdoptsAReshardAndReportsALostOne(t *testing.T) {
	layout := NewLayout("rs")
	d := NewDecoder(layout, func(key string, _ []byte) string { return "put " + key })
	first := shard.Config{Shards: 2, Name: "p", Protocol: shard.Protocol}
	d.SetFleet(first)
	resharded := first
	resharded.Protocol = shard.ProtocolResharded
	resharded.Layouts = []shard.Layout{{Shards: 4, Name: "c", Lineage: shard.LineageMod, Done: true}}
	value := func(c shard.Config) []byte { b, _ := json.Marshal(c); return b }
	listing := func(cfg shard.Config) []*Pair {
		return []*Pair{
			{Key: layout.Config(), Value: value(cfg), Index: 10},
			{Key: layout.Shard("c-003"), Value: []byte(`{"worker":"w1"}`), Index: 11, Session: "s1"},
			{Key: layout.Shard("p-000"), Value: []byte(`{"worker":"w1","released":"closed"}`), Index: 9},
		}
	}
	snap := d.Decode(listing(resharded), 12)
	if len(snap.Problems) > 0 || snap.Config == nil || len(snap.Config.Layouts) != 1 || len(snap.Shards) != 1 {
		t.Fatalf("after a reshard: problems %v, config %+v, shards %+v; want it adopted, the child listed, the retired parent skipped", snap.Problems, snap.Config, snap.Shards)
	}
	snap = d.Decode(listing(first), 13)
	if len(snap.Problems) == 0 || !strings.Contains(snap.Problems[0], "lacks reshards this fleet ran") || len(snap.Config.Layouts) != 1 {
		t.Fatalf("a stored config without the reshard: problems %v, config %+v; want it reported and the reshard kept", snap.Problems, snap.Config)
	}
}
