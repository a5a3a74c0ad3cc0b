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
		Verdicts: 3, StuckSince: t0.Add(-time.Hour), OutOfBand: t0.Add(-time.Minute), Arrived: map[shard.ID]time.Time{ids[0]: t0, ids[1]: t0, ids[4]: t0.Add(time.Second)},
		Preparing: map[shard.ID]time.Time{ids[7]: t0, ids[9]: t0.Add(-time.Second)}}
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
		!maps.EqualFunc(back.Arrived, a.Arrived, time.Time.Equal) || !maps.EqualFunc(back.Preparing, a.Preparing, time.Time.Equal) {
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
		{`{"v":1,"preparing":[{"at":"2026-12-01T00:00:00Z","shards":"x"}]}`, `"x"`},
	} {
		kept := rebalance.Assignment{Waiting: 7}
		if err := decodeMemory(cfg, []byte(tc.memory), &kept); err == nil || !strings.Contains(err.Error(), tc.want) || kept.Waiting != 7 {
			t.Errorf("decodeMemory(%s) = %v, left %+v; want an error saying %s and the assignment as it was", tc.memory, err, kept, tc.want)
		}
		if _, ok := Remembered(shard.Assignment{Memory: []byte(tc.memory)}); ok && tc.want != "negative" && tc.want != `"99"` && tc.want != `"x"` {
			t.Errorf("Remembered read %s", tc.memory)
		}
	}
}

// TestMemoryOfAnEarlierGenerationForgivesVerdicts: a memory written
// before the fleet's generation was raised keeps the worker's history of
// moves (since, arrivals, out of band) but not its stuck verdict or its
// wait: under the lost history every claim was refused, and judging the
// workers by it would keep their shards from them after the recovery.
// A memory of the current generation keeps everything.
func TestMemoryOfAnEarlierGenerationForgivesVerdicts(t *testing.T) {
	cfg := shard.Config{Shards: 4}
	t0 := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	a := rebalance.Assignment{Since: t0, Waiting: 2, WaitingSince: t0, Stuck: true, StuckSession: "s-1", Verdicts: 2,
		StuckSince: t0, OutOfBand: t0, Arrived: map[shard.ID]time.Time{cfg.IDs()[0]: t0}}
	old, err := encodeMemory(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	raised := cfg
	raised.Generation = 1
	var back rebalance.Assignment
	if err := decodeMemory(raised, old, &back); err != nil {
		t.Fatal(err)
	}
	if back.Stuck || back.StuckSession != "" || back.Verdicts != 0 || !back.StuckSince.IsZero() || back.Waiting != 0 || !back.WaitingSince.IsZero() {
		t.Errorf("a generation-0 memory read in generation 1 = %+v, want no verdict and no wait", back)
	}
	if !back.Since.Equal(t0) || !back.OutOfBand.Equal(t0) || len(back.Arrived) != 1 {
		t.Errorf("a generation-0 memory read in generation 1 lost its moves: %+v", back)
	}
	current, err := encodeMemory(raised, a)
	if err != nil {
		t.Fatal(err)
	}
	back = rebalance.Assignment{}
	if err := decodeMemory(raised, current, &back); err != nil || !back.Stuck || back.Verdicts != 2 || back.Waiting != 2 {
		t.Errorf("a generation-1 memory read in generation 1 = %+v, %v; want it whole", back, err)
	}
}
