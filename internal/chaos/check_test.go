package chaos

import (
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
	tk := h.TakeoverOf(Fault{Kind: Kill9, Target: "a", Start: t0}, 100)
	if !tk.Done || tk.Shards != 1 || tk.Took != 3200*time.Millisecond || !tk.Counted || tk.Duplicates != 50 {
		t.Errorf("takeover %+v, want 1 shard moved in 3.2 s with 50 duplicates", tk)
	}
	// Partition: measured, duplicates not estimated.
	if tk := h.TakeoverOf(Fault{Kind: Partition, Target: "a", Start: t0}, 100); !tk.Done || tk.Counted {
		t.Errorf("partition takeover %+v", tk)
	}
	// 5 s later a was no longer processing the shard (no commit since).
	if tk := h.TakeoverOf(Fault{Kind: Kill9, Target: "a", Start: t0.Add(-500 * time.Millisecond).Add(3 * time.Second)}, 100); tk.Shards != 0 {
		t.Errorf("a shard the victim no longer processed was counted: %+v", tk)
	}
	// Never taken over: not done.
	if tk := NewHistory(ops[:2]).TakeoverOf(Fault{Kind: SigStop, Target: "a", Start: t0}, 100); tk.Done || tk.Shards != 1 {
		t.Errorf("takeover without a new owner: %+v", tk)
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

// Summarize counts each fenced-out commit under the latest fault of its
// worker, or of the Consul server that worker talks to, and the table
// shows it.
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
		{Kind: Kill9, Target: "b", Start: at(500), End: at(600)},
		{Kind: SigStop, Target: "a", Start: at(1_000), End: at(2_500)},
		{Kind: LeaderKill, Target: "server0", Start: at(4_000), End: at(5_000)},
	}
	s := Summarize(h, h.Check(), faults, map[string]string{"a": "server0", "b": "server1"}, 100)
	rows := map[Kind]*KindStats{}
	for _, r := range s.Kinds {
		rows[r.Kind] = r
	}
	if r := rows[SigStop]; r.FencedOut != 1 || r.StaleRejected != 1 || r.Moved != 1 {
		t.Errorf("sigstop row %+v, want 1 fenced-out commit refused and 1 takeover", r)
	}
	if r := rows[LeaderKill]; r.FencedOut != 1 || r.Cancelled != 1 {
		t.Errorf("leader-kill row %+v, want the later, failed, commit", r)
	}
	if r := rows[Kill9]; r.FencedOut != 0 || r.Faults != 1 {
		t.Errorf("kill-9 row %+v", r)
	}
	if tab := s.Table(); !strings.Contains(tab, "sigstop") || !strings.Contains(tab, "stale commits accepted: 0 of 2") {
		t.Errorf("table:\n%s", tab)
	}
}
