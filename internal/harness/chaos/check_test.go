package chaos

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// op builds a history entry: worker w (process w/1), times in ms.
func op(w, kind string, tok shard.Token, off int64, result string, start, end int64) offsetlog.Op {
	return offsetlog.Op{ID: w + "/1/" + kind, Worker: w, Kind: kind, Shard: "s", Token: tok, Offset: off,
		Result: result, Start: start * 1e6, End: end * 1e6}
}

// load builds a Load that returned cp.
func load(w string, cp offsets.Checkpoint, start, end int64) offsetlog.Op {
	return offsetlog.Op{ID: w + "/1/load", Worker: w, Kind: offsetlog.OpLoad, Shard: "s", CP: cp,
		Result: offsetlog.ResultOK, Start: start * 1e6, End: end * 1e6}
}

// The checkers on hand-made histories: each bad one must be reported, the
// good one must not, or a passing run means nothing.
func TestCheckersCatchViolations(t *testing.T) {
	const ok, stale = offsetlog.ResultOK, offsetlog.ResultStale
	handoff := []offsetlog.Op{
		op("a", "fence", 5, 0, ok, 0, 1),
		op("a", "commit", 5, 100, ok, 2, 3),
		op("b", "fence", 7, 0, ok, 4, 5),
		load("b", offsets.Checkpoint{Offset: 100, Token: 5, Floor: 7}, 6, 7),
		op("a", "commit", 5, 110, stale, 8, 9), // the fenced-out owner, refused
		op("b", "commit", 7, 150, ok, 10, 11),
	}
	for _, tc := range []struct {
		name      string
		ops       []offsetlog.Op
		want      string
		fencedOut int
		lin       porcupine.CheckResult
	}{
		{"hand-off", handoff, "", 1, porcupine.Ok},
		{"stale commit accepted", append(handoff[:4:4], op("a", "commit", 5, 110, ok, 8, 9)), "stale commit accepted", 1, porcupine.Illegal},
		{"offset back", append(handoff[:4:4], op("b", "commit", 7, 90, ok, 8, 9)), "offset went back", 0, porcupine.Ok},
		{"commit lost", append(handoff[:3:3], load("b", offsets.Checkpoint{Offset: 50, Token: 5, Floor: 7}, 6, 7)), "a commit was lost", 0, porcupine.Illegal},
		{"unknown commit", append(handoff[:3:3], op("a", "commit", 5, 120, offsetlog.ResultUnknown, 3, 1<<40),
			load("b", offsets.Checkpoint{Offset: 120, Token: 5, Floor: 7}, 6, 7)),
			"", 0, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewHistory(tc.ops).Check()
			got := strings.Join(v.Problems, "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
			if len(v.FencedOut) != tc.fencedOut {
				t.Errorf("%d fenced-out commits, want %d", len(v.FencedOut), tc.fencedOut)
			}
			if got := linearizable(tc.ops); got != tc.lin {
				t.Errorf("porcupine: %s, want %s", got, tc.lin)
			}
		})
	}
}

// A takeover is measured from the fault to the new owner's fence, and the
// duplicates from what the victim had processed to what the new owner
// loaded; a shard the victim had stopped processing is left out.
func TestTakeover(t *testing.T) {
	const ok = offsetlog.ResultOK
	t0 := time.UnixMilli(10_000)
	ops := []offsetlog.Op{
		op("a", "fence", 5, 0, ok, 8_000, 8_001),
		op("a", "commit", 5, 100, ok, 9_500, 9_501), // 0.5 s before the fault: +50 processed since
		op("b", "fence", 7, 0, ok, 13_000, 13_200),
		load("b", offsets.Checkpoint{Offset: 100, Token: 5, Floor: 7}, 13_201, 13_202),
	}
	h := NewHistory(ops)
	a := []string{"a"}
	tk := h.TakeoverOf(Fault{Kind: Kill9, Target: "a", Victims: a, Start: t0}, 100)
	if !tk.Done || tk.Shards != 1 || tk.Took != 3200*time.Millisecond || !tk.Counted || tk.Duplicates != 50 {
		t.Errorf("takeover %+v, want 1 shard moved in 3.2 s with 50 duplicates", tk)
	}
	// Partition: measured, duplicates not estimated.
	if tk := h.TakeoverOf(Fault{Kind: Partition, Target: "a", Victims: a, Start: t0}, 100); !tk.Done || tk.Counted {
		t.Errorf("partition takeover %+v", tk)
	}
	// 5 s later a was no longer processing the shard (no commit since).
	if tk := h.TakeoverOf(Fault{Kind: Kill9, Target: "a", Victims: a, Start: t0.Add(-500 * time.Millisecond).Add(3 * time.Second)}, 100); tk.Shards != 0 {
		t.Errorf("a shard the victim no longer processed was counted: %+v", tk)
	}
	// Never taken over: not done.
	if tk := NewHistory(ops[:2]).TakeoverOf(Fault{Kind: SigStop, Target: "a", Victims: a, Start: t0}, 100); tk.Done || tk.Shards != 1 {
		t.Errorf("takeover without a new owner: %+v", tk)
	}
	// An agent fault measures every victim's shards; a fault that hit
	// neither holder measures nothing.
	if tk := h.TakeoverOf(Fault{Kind: AgentKill, Target: "agent1", Victims: []string{"c", "a"}, Start: t0}, 100); !tk.Done || tk.Shards != 1 || tk.Counted {
		t.Errorf("agent-kill takeover %+v", tk)
	}
	if tk := h.TakeoverOf(Fault{Kind: AgentKill, Target: "agent2", Victims: []string{"c"}, Start: t0}, 100); tk.Shards != 0 {
		t.Errorf("takeover of a fault that hit no holder: %+v", tk)
	}
}

func TestQuantile(t *testing.T) {
	xs := []int64{5, 1, 4, 2, 3}
	for q, want := range map[int]int64{50: 3, 99: 5, 100: 5, 1: 1} {
		if got, _ := quantile(xs, q); got != want {
			t.Errorf("q%d = %d, want %d", q, got, want)
		}
	}
	if _, ok := quantile([]int64(nil), 50); ok {
		t.Error("quantile of nothing")
	}
}

// Summarize counts each fenced-out commit, and each overlap, under the
// latest fault that touched its worker (a leader kill touches every
// worker), and the table shows it.
func TestSummarizeAttributes(t *testing.T) {
	const ok, stale = offsetlog.ResultOK, offsetlog.ResultStale
	ops := []offsetlog.Op{
		op("a", "fence", 5, 0, ok, 0, 1),
		op("b", "fence", 7, 0, ok, 2_000, 2_001),
		op("a", "commit", 5, 100, stale, 3_000, 3_001),
		op("a", "commit", 5, 110, offsetlog.ResultError, 6_000, 6_001),
	}
	h := NewHistory(ops)
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	faults := []Fault{
		{Kind: Kill9, Target: "b", Victims: []string{"b"}, Start: at(500), End: at(600)},
		{Kind: SigStop, Target: "a", Victims: []string{"a"}, Start: at(1_000), End: at(2_500)},
		{Kind: LeaderKill, Target: "server0", Start: at(4_000), End: at(5_000)},
	}
	runs := []offsetlog.Interval{run("a", 5, 1, 3_200), run("b", 7, 2_002, 9_000)}
	s := Summarize(h, h.Check(), CheckRuns(runs, Pauses(faults), time.Second), faults, 100)
	rows := map[Kind]*KindStats{}
	for _, r := range s.Kinds {
		rows[r.Kind] = r
	}
	if r := rows[SigStop]; r.FencedOut != 1 || r.StaleRejected != 1 || r.Moved != 1 || r.Overlaps != 0 || r.Woke != 1 {
		t.Errorf("sigstop row %+v, want 1 fenced-out commit refused, 1 takeover, 1 run woken late", r)
	}
	if r := rows[LeaderKill]; r.FencedOut != 1 || r.Cancelled != 1 {
		t.Errorf("leader-kill row %+v, want the later, failed, commit", r)
	}
	if r := rows[Kill9]; r.FencedOut != 0 || r.Faults != 1 {
		t.Errorf("kill-9 row %+v", r)
	}
	for _, want := range []string{"sigstop", "stale commits accepted: 0 of 2", "instants two processes ran one shard: 0",
		"woke after the next owner started: 1 (SIGCONT to end p50 700ms, max 700ms); their effects after it: 0"} {
		if tab := s.Table(); !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	// The same runs without the pause: an overlap, blamed on the latest
	// fault of the older run's worker before the newer start.
	s = Summarize(h, h.Check(), CheckRuns(runs, nil, time.Second), faults, 100)
	for _, r := range s.Kinds {
		if want := map[Kind]int{SigStop: 1}[r.Kind]; r.Overlaps != want {
			t.Errorf("%s: %d overlaps, want %d", r.Kind, r.Overlaps, want)
		}
	}
}

// run builds a handler run of worker w (process w/1) with token tok, times
// in ms, and effects at the given ms.
func run(w string, tok shard.Token, start, end int64, effects ...int64) offsetlog.Interval {
	iv := offsetlog.Interval{ID: fmt.Sprintf("%s/1/%d", w, start), Worker: w, Shard: "s", Token: tok, Start: start * 1e6, End: end * 1e6}
	if end == math.MaxInt64 {
		iv.End = math.MaxInt64
	}
	for _, e := range effects {
		iv.Effects = append(iv.Effects, offsetlog.Effect{At: e * 1e6, Offset: e})
	}
	return iv
}

// The run check on hand-made histories: each bad one must be reported
// (and named with its shard, workers, tokens and times), the good ones
// must not, or a passing run means nothing.
func TestCheckRuns(t *testing.T) {
	stopA := []Pause{{Worker: "a", From: 5e6, To: 25e6}} // a SIGSTOPped from 5 to 25 ms
	for _, tc := range []struct {
		name     string
		runs     []offsetlog.Interval
		pauses   []Pause
		overlaps int
		woke     int
		effects  int    // of woken runs, after the newer start
		want     string // in the problems; "" for none
	}{
		{"hand-off", []offsetlog.Interval{run("a", 5, 0, 10, 3, 9), run("b", 7, 12, 20, 15)}, nil, 0, 0, 0, ""},
		{"restart of one claim", []offsetlog.Interval{run("a", 5, 0, 10), run("a", 5, 11, 20), run("b", 7, 21, 30)}, nil, 0, 0, 0, ""},
		{"overlap", []offsetlog.Interval{run("a", 5, 0, 15, 3), run("b", 7, 12, 20)},
			nil, 1, 0, 0, "s: a (token 5, process a/1) ran from"},
		{"overlap in one process across terms", []offsetlog.Interval{run("a", 5, 0, 15), run("a", 8, 12, 20)},
			nil, 1, 0, 0, "3ms of overlap"},
		{"older token started after the newer", []offsetlog.Interval{run("b", 7, 0, 10), run("a", 5, 12, 14)},
			nil, 1, 0, 0, "two processes ran one shard"},
		{"an effect at the newer start", []offsetlog.Interval{run("a", 5, 0, 12, 12), run("b", 7, 12, 20)},
			nil, 1, 0, 0, "1 effect(s) of token 5"},
		{"killed, never closed", []offsetlog.Interval{run("a", 5, 0, math.MaxInt64), run("b", 7, 12, 20)},
			nil, 1, 0, 0, "never ended"},
		{"paused across the newer start, no effect after it", []offsetlog.Interval{run("a", 5, 0, 26, 3), run("b", 7, 12, 20)},
			stopA, 0, 1, 0, ""},
		{"paused, acted after waking", []offsetlog.Interval{run("a", 5, 0, 27, 3, 26), run("b", 7, 12, 20)},
			stopA, 0, 1, 1, "a paused run acted after a newer owner started"},
		{"paused past the budget, woke before the newer start, returned after it", []offsetlog.Interval{run("a", 5, 0, 33, 3), run("b", 7, 30, 50)},
			stopA, 0, 1, 0, ""},
		{"paused past the budget, woke before the newer start, acted after it", []offsetlog.Interval{run("a", 5, 0, 33, 3, 31), run("b", 7, 30, 50)},
			stopA, 0, 1, 1, "a paused run acted after a newer owner started"},
		{"paused past the budget long before, ran on after waking", []offsetlog.Interval{run("a", 5, 0, 1000, 3), run("b", 7, 900, 1100)},
			stopA, 1, 0, 0, "two processes ran one shard"},
		{"paused within the budget and ran on", []offsetlog.Interval{run("a", 5, 0, 40), run("b", 7, 30, 50)},
			[]Pause{{Worker: "a", From: 5e6, To: 12e6}}, 1, 0, 0, "two processes ran one shard"},
		{"stopped before its run started", []offsetlog.Interval{run("a", 5, 6, 26), run("b", 7, 12, 20)},
			stopA, 1, 0, 0, "two processes ran one shard"},
		{"another worker's pause", []offsetlog.Interval{run("a", 5, 0, 26), run("b", 7, 12, 20)},
			[]Pause{{Worker: "b", From: 5e6, To: 25e6}}, 1, 0, 0, "two processes ran one shard"},
		{"one token, two processes", []offsetlog.Interval{run("a", 5, 0, 10), run("b", 5, 12, 20)},
			nil, 0, 0, 0, "token 5 run by two processes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckRuns(tc.runs, tc.pauses, 10*time.Millisecond)
			got := strings.Join(v.Problems, "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
			if len(v.Overlaps) != tc.overlaps || len(v.Woke) != tc.woke || v.WokeEffects != tc.effects {
				t.Errorf("%d overlaps, %d woken, %d effects after waking; want %d, %d, %d",
					len(v.Overlaps), len(v.Woke), v.WokeEffects, tc.overlaps, tc.woke, tc.effects)
			}
			if v.Runs != len(tc.runs) || v.Shards != 1 {
				t.Errorf("%d runs over %d shards checked, want %d over 1", v.Runs, v.Shards, len(tc.runs))
			}
		})
	}
}

// A run without an end closes when its process was seen to exit; one whose
// process is not known to have exited stays open and overlaps what follows.
func TestCloseRuns(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	runs := []offsetlog.Interval{run("a", 5, 1_000, math.MaxInt64), run("a", 6, 3_000, math.MaxInt64), run("b", 7, 5_000, 6_000)}
	lives := map[string][]Life{"a": {{Start: at(0), Exit: at(2_000)}, {Start: at(2_500)}}}
	closed := CloseRuns(runs, lives)
	if closed[0].End != at(2_000).UnixNano() || closed[1].End != math.MaxInt64 || closed[2].End != runs[2].End {
		t.Errorf("ends %d, %d, %d", closed[0].End, closed[1].End, closed[2].End)
	}
	if runs[0].End != math.MaxInt64 {
		t.Error("CloseRuns changed its argument")
	}
	if v := CheckRuns(closed, nil, time.Second); len(v.Overlaps) != 1 || v.Overlaps[0].Old.Token != 6 {
		t.Errorf("overlaps %v, want the run of the process still running (token 6) against token 7", v.Overlaps)
	}
}
