package rollingrestart

import (
	"math"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
)

// TestRestartRunsCountsMovesAndGaps: a move is a shard's run followed by
// one on another worker ID, whatever process ran it; a worker that comes
// back under its ID moved nothing; the gap is from a run's end to the
// next start, not less than zero; runs that started before the restart
// count for nothing.
func TestRestartRunsCountsMovesAndGaps(t *testing.T) {
	const s = int64(time.Second)
	run := func(shardID, process string, start, end int64) offsetlog.Interval {
		return offsetlog.Interval{ID: process + "/1", Worker: process[:3], Shard: shard.ID(shardID), Start: start, End: end}
	}
	for _, tc := range []struct {
		name    string
		ivs     []offsetlog.Interval
		moves   int
		longest time.Duration
	}{
		{"nothing after since", []offsetlog.Interval{run("a", "w01/10", 1*s, 2*s), run("a", "w02/11", 3*s, 4*s), run("a", "w01/10", 5*s, math.MaxInt64)}, 0, 0},
		{"back to the same ID, another process", []offsetlog.Interval{run("a", "w01/10", 1*s, 11*s), run("a", "w01/12", 15*s, math.MaxInt64)}, 0, 4 * time.Second},
		{"away and back", []offsetlog.Interval{
			run("a", "w01/10", 1*s, 11*s), run("a", "w02/11", 11*s+s/10, 20*s), run("a", "w01/12", 20*s+s/5, math.MaxInt64),
			run("b", "w03/13", 1*s, math.MaxInt64),
		}, 2, 200 * time.Millisecond},
		{"overlap by the clocks", []offsetlog.Interval{run("a", "w01/10", 1*s, 12*s), run("a", "w02/11", 11*s, math.MaxInt64)}, 1, 0},
		{"never ended, then another", []offsetlog.Interval{run("a", "w01/10", 1*s, math.MaxInt64), run("a", "w02/11", 13*s, math.MaxInt64)}, 1, 0},
		{"out of order, several shards", []offsetlog.Interval{
			run("b", "w02/11", 14*s, math.MaxInt64), run("a", "w01/10", 1*s, 12*s), run("b", "w01/10", 1*s, 12*s), run("a", "w01/12", 13*s, math.MaxInt64),
		}, 1, 2 * time.Second},
	} {
		f := restartRuns(tc.ivs, 10*s)
		if f.moves != tc.moves || f.longest != tc.longest {
			t.Errorf("%s: %d moves, longest gap %v (%s); want %d, %v", tc.name, f.moves, f.longest, f.shard, tc.moves, tc.longest)
		}
	}
}

// owners maps shards "a", "b", … to the workers ws, in order.
func owners(ws ...string) map[string]string {
	m := map[string]string{}
	for i, w := range ws {
		m[string(rune('a'+i))] = w
	}
	return m
}

// TestRestSpreadOnlyAtRest: the spread counts only views in which every
// shard is owned by a live worker and every live worker owns one.
func TestRestSpreadOnlyAtRest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      procfleet.View
		spread int
		ok     bool
	}{
		{"balanced", procfleet.View{Owners: owners("w1", "w2", "w1", "w2", "w3", "w3"), Members: []string{"w1", "w2", "w3"}}, 0, true},
		{"uneven", procfleet.View{Owners: owners("w1", "w1", "w1", "w1", "w2", "w3"), Members: []string{"w1", "w2", "w3"}}, 3, true},
		{"a shard free", procfleet.View{Owners: owners("w1", "w1", "w2", "w2", "w3"), Members: []string{"w1", "w2", "w3"}}, 0, false},
		{"held by a worker gone", procfleet.View{Owners: owners("w1", "w1", "w2", "w2", "w3", "w4"), Members: []string{"w1", "w2", "w3"}}, 0, false},
		{"a joiner with none", procfleet.View{Owners: owners("w1", "w1", "w2", "w2", "w3", "w3"), Members: []string{"w1", "w2", "w3", "w4"}}, 0, false},
		{"no members", procfleet.View{}, 0, false},
	} {
		n, ok := restSpread(tc.v, 6)
		if n != tc.spread || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, n, ok, tc.spread, tc.ok)
		}
	}
}

// TestRestartObserverCountsOwnerChanges: a shard seen held by another
// worker than the one last seen holding it is a move; free in between and
// back to the same worker is none.
func TestRestartObserverCountsOwnerChanges(t *testing.T) {
	o := newRestartObserver(2)
	for _, v := range []procfleet.View{
		{Owners: map[string]string{"a": "w1", "b": "w2"}, Members: []string{"w1", "w2"}},
		{Owners: map[string]string{"b": "w2"}, Members: []string{"w2"}},                  // a free
		{Owners: map[string]string{"a": "w1", "b": "w2"}, Members: []string{"w1", "w2"}}, // back to w1
		{Owners: map[string]string{"a": "w2", "b": "w2"}, Members: []string{"w1", "w2"}}, // a moved
	} {
		o.see(v)
	}
	spread, all, moves, _ := o.figures()
	if moves != 1 || spread != 0 || all != 2 {
		t.Errorf("moves %d, spread at rest %d, at any view %d; want 1, 0, 2", moves, spread, all)
	}
}

// TestRestartObserverTimesTheImbalance: the longest stretch of views with
// max − min above 2 runs from its first such view to the first view back
// within 2, and one still open at the end counts too.
func TestRestartObserverTimesTheImbalance(t *testing.T) {
	members := []string{"w1", "w2"}
	even := procfleet.View{Owners: owners("w1", "w2", "w1", "w2"), Members: members}
	uneven := procfleet.View{Owners: owners("w1", "w1", "w1", "w1"), Members: members} // 4 − 0
	o := newRestartObserver(4)
	t0 := time.Unix(1000, 0)
	for i, v := range []procfleet.View{even, uneven, uneven, even, uneven, even} {
		o.seeAt(v, t0.Add(time.Duration(i)*time.Second))
	}
	// Stretches: views 1–3 (2 s) and 4–5 (1 s).
	if _, _, _, over := o.figures(); over != 2*time.Second {
		t.Errorf("longest stretch above 2: %v, want 2s", over)
	}
	o.seeAt(uneven, time.Now().Add(-time.Hour)) // open, an hour ago
	if _, _, _, over := o.figures(); over < time.Hour {
		t.Errorf("an open stretch of an hour counted as %v", over)
	}
}
