package assignor

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// TestStateReadsMemory: the step's input carries back, from the memory
// written beside a worker's key, what the step must remember (arrivals,
// the out-of-band mark); a key without a readable memory is judged
// afresh and said to be.
func TestStateReadsMemory(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cfg := shard.Config{Shards: 4}
	ids := cfg.IDs()
	memory, err := encodeMemory(cfg, rebalance.Assignment{Arrived: map[shard.ID]time.Time{ids[1]: now}, OutOfBand: now.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	snap := shard.Snapshot{Assignments: map[string]shard.Assignment{
		"w1": {Shards: ids[:2], Memory: memory},
		"w2": {Shards: ids[2:3], Memory: []byte(`{"v":9}`)},
	}}
	st, problems := State(snap, cfg, ids, now)
	a := st.Assigned["w1"]
	if !a.Arrived[ids[1]].Equal(now) || len(a.Arrived) != 1 || !a.OutOfBand.Equal(now.Add(-time.Minute)) || len(a.Shards) != 2 {
		t.Errorf("the step reads %+v; want the key's shards, arrived and out of band from its memory", a)
	}
	if b := st.Assigned["w2"]; len(b.Shards) != 1 || len(problems) != 1 {
		t.Errorf("a memory of another version: %+v, problems %q; want the key's shards, judged afresh, and one problem", b, problems)
	}
}

// TestKeysSayWhy: a decision becomes keys that carry one reason per
// shard: a shard released for load is placed as a load move from its last
// owner, a never-owned one as initial, an orphaned one as orphaned from
// the owner whose session ended; a hand-off started now says the step's
// reason; one in flight keeps the reason its key had.
func TestKeysSayWhy(t *testing.T) {
	cfg := shard.Config{Shards: 6}
	ids := cfg.IDs()
	snap := shard.Snapshot{Index: 40,
		Members: []shard.MemberState{{Member: shard.Member{ID: "w1"}, Session: "s1"}, {Member: shard.Member{ID: "w3"}, Session: "s3"}},
		Shards: []shard.ShardState{
			{Shard: ids[1], Token: 9, Owner: shard.Owner{Worker: "w2", Released: shard.ReasonLoad}},
			{Shard: ids[2], Token: 8, Owner: shard.Owner{Worker: "w9"}},
			{Shard: ids[3], Token: 7, Session: "s3", Owner: shard.Owner{Worker: "w3"}},
			{Shard: ids[4], Token: 6, Session: "s3", Owner: shard.Owner{Worker: "w3"}},
		},
		Assignments: map[string]shard.Assignment{"w3": {Shards: ids[3:4], Release: map[shard.ID]shard.Why{ids[4]: {Reason: shard.ReasonDrain}}}},
	}
	d := rebalance.Decision{
		Assign: map[string]rebalance.Assignment{
			"w1": {Shards: ids[:3], Free: ids[:3]},
			"w3": {},
		},
		Moves: []rebalance.Transfer{
			{Shard: ids[0], To: "w1", Reason: shard.ReasonFree},
			{Shard: ids[1], To: "w1", Reason: shard.ReasonFree},
			{Shard: ids[2], To: "w1", Reason: shard.ReasonOrphaned},
			{Shard: ids[3], From: "w3", To: "w1", Reason: shard.ReasonRebalance},
		},
	}
	set, err := Keys(snap, cfg, d, false)
	if err != nil {
		t.Fatal(err)
	}
	w1, w3 := set["w1"], set["w3"]
	for id, want := range map[shard.ID]shard.Why{
		ids[0]: {Reason: shard.ReasonInitial},
		ids[1]: {Reason: shard.ReasonLoad, From: "w2"},
		ids[2]: {Reason: shard.ReasonOrphaned, From: "w9"},
	} {
		if got := w1.Why[id]; got != want {
			t.Errorf("w1's key says %s came for %q, want %q", id, got, want)
		}
	}
	if w1.AsOf != 40 || len(w1.Memory) == 0 {
		t.Errorf("w1's key as of %d with memory %q; want as of the listing's index and a memory", w1.AsOf, w1.Memory)
	}
	if got := w3.Release[ids[3]]; got.Reason != shard.ReasonRebalance {
		t.Errorf("a hand-off started now is released for %q, want rebalance", got)
	}
	if got := w3.Release[ids[4]]; got.Reason != shard.ReasonDrain {
		t.Errorf("a hand-off in flight is released for %q, want its key's drain", got)
	}
}

// TestNoGatherPlacesAtOnce: a negative ColdStartGather never waits.
func TestNoGatherPlacesAtOnce(t *testing.T) {
	var g gathering
	if at := g.wait(rebalance.State{Now: time.Unix(100, 0)}, -1, nil); !at.IsZero() {
		t.Errorf("without gathering a cold fleet waits until %v, want placed at once", at)
	}
}
