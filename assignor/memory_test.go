package assignor

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// TestMemoryRoundTrip: what the assignor remembers about a worker
// round-trips, arrivals grouped by time; a shard outside the config among
// the arrivals is refused; a memory of another version, or one that is
// not JSON, is refused with what is wrong and leaves the assignment as it
// was; Remembered shows the verdict to operators.
func TestMemoryRoundTrip(t *testing.T) {
	cfg := shard.Config{Shards: 16}
	ids := cfg.IDs()
	t0 := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	a := rebalance.Assignment{Since: t0, Waiting: 2, WaitingSince: t0.Add(time.Second), Stuck: true, StuckSession: "s-1",
		Verdicts: 3, StuckSince: t0.Add(-time.Hour), OutOfBand: t0.Add(-time.Minute), Arrived: map[shard.ID]time.Time{ids[0]: t0, ids[1]: t0, ids[4]: t0.Add(time.Second)}}
	b, err := encodeMemory(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"shards":"0-1"`) || !strings.Contains(string(b), `"v":1`) {
		t.Errorf("memory %s: want its version and arrivals grouped by time", b)
	}
	var back rebalance.Assignment
	if err := decodeMemory(cfg, b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Since.Equal(t0) || back.Waiting != 2 || !back.Stuck || back.StuckSession != "s-1" || !back.OutOfBand.Equal(a.OutOfBand) ||
		back.Verdicts != 3 || !back.StuckSince.Equal(a.StuckSince) ||
		!maps.EqualFunc(back.Arrived, a.Arrived, time.Time.Equal) {
		t.Errorf("round trip gave %+v, want %+v", back, a)
	}
	if m, ok := Remembered(shard.Assignment{Memory: b}); !ok || !m.Stuck || m.StuckSession != "s-1" || m.Waiting != 2 || m.Verdicts != 3 {
		t.Errorf("Remembered = %+v, %v", m, ok)
	}
	a.Arrived["nope"] = t0
	if _, err := encodeMemory(cfg, a); err == nil {
		t.Errorf("an unknown shard among the arrivals was encoded")
	}
	for _, tc := range []struct{ memory, want string }{
		{`not json`, "malformed"},
		{`{"v":2,"stuck":true}`, "version 2"},
		{`{"v":1,"waiting":-1}`, "negative"},
		{`{"v":1,"arrived":[{"at":"2026-12-01T00:00:00Z","shards":"99"}]}`, `"99"`},
	} {
		kept := rebalance.Assignment{Waiting: 7}
		if err := decodeMemory(cfg, []byte(tc.memory), &kept); err == nil || !strings.Contains(err.Error(), tc.want) || kept.Waiting != 7 {
			t.Errorf("decodeMemory(%s) = %v, left %+v; want an error saying %s and the assignment as it was", tc.memory, err, kept, tc.want)
		}
		if _, ok := Remembered(shard.Assignment{Memory: []byte(tc.memory)}); ok && tc.want != "negative" && tc.want != `"99"` {
			t.Errorf("Remembered read %s", tc.memory)
		}
	}
}
