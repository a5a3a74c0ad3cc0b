package chaos

import (
	"strings"
	"testing"
	"time"
)

// The figure after an assignor fault is the first other session seen on
// P/assignor after the fault: not the victim's own (still held, or held
// again before expiring), not the key free, not a holder from before.
func TestElectionAfterAssignorFault(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	old := Holder{Worker: "w01", Session: "s1", Epoch: 10, Since: at(-5000), Seen: at(-4990)}
	seen := []Holder{
		{Worker: "w09", Session: "s0", Epoch: 5, Seen: at(-9000)}, // before the fault
		old,
		{Seen: at(2100)}, // freed by the session's end
		{Worker: "w04", Session: "s4", Epoch: 40, Since: at(3200), Seen: at(3210)},
		{Worker: "w01", Session: "s1b", Epoch: 50, Since: at(6000), Seen: at(6010)}, // the victim back, later
	}
	a := &assignorWatch{seen: seen}
	faults := []Fault{
		{Kind: AssignorKill9, Target: "w01", Start: t0, Assignor: old},
		{Kind: AssignorStop, Target: "w04", Start: at(4000), Assignor: seen[3]},
		{Kind: AssignorStop, Target: "w01", Start: at(7000), Assignor: seen[4]}, // none after it
		{Kind: Kill9, Target: "w02", Start: t0},                                 // not an assignor fault
		{Kind: AssignorKill9, Start: t0, Err: "no assignor"},                    // failed: nothing to measure
	}
	for i := range faults {
		faults[i].Start = faults[i].Start.Add(-electWithin) // long past: awaitElections does not wait
	}
	for i := range seen {
		a.seen[i].Seen = seen[i].Seen.Add(-electWithin)
		if !seen[i].Since.IsZero() {
			a.seen[i].Since = seen[i].Since.Add(-electWithin)
		}
	}
	a.awaitElections(t.Context(), faults)
	if d, ok := faults[0].ElectedAfter(); !ok || faults[0].Elected.Worker != "w04" || d != 3200*time.Millisecond {
		t.Errorf("after the first fault: %s after %v (%v), want w04 after 3.2s (its Since)", faults[0].Elected, d, ok)
	}
	if d, ok := faults[1].ElectedAfter(); !ok || faults[1].Elected.Session != "s1b" || d != 2000*time.Millisecond {
		t.Errorf("after the second fault: %s after %v (%v), want session s1b after 2s", faults[1].Elected, d, ok)
	}
	for _, i := range []int{2, 3, 4} {
		if _, ok := faults[i].ElectedAfter(); ok {
			t.Errorf("fault %d (%s): elected %s, want none", i, faults[i].Kind, faults[i].Elected)
		}
	}
	probs := AssignorProblems(faults)
	if len(probs) != 1 || !strings.Contains(probs[0], "assignor-sigstop of w01") || !strings.Contains(probs[0], "session s1b") {
		t.Errorf("problems %q, want one about the last assignor-sigstop of w01", probs)
	}
	sum := Summarize(NewHistory(nil), Verdict{}, RunVerdict{}, faults, 100)
	for _, r := range sum.Kinds {
		switch r.Kind {
		case AssignorKill9:
			if r.Faults != 2 || r.Failed != 1 || len(r.Elected) != 1 || r.NotElected != 0 {
				t.Errorf("%s row: %+v", r.Kind, r)
			}
		case AssignorStop:
			if r.Faults != 2 || len(r.Elected) != 1 || r.NotElected != 1 {
				t.Errorf("%s row: %+v", r.Kind, r)
			}
		}
	}
	if tab := sum.Table(); !strings.Contains(tab, "assignor-sigstop: new assignor") {
		t.Errorf("table has no election line for assignor-sigstop:\n%s", tab)
	}
}

// Since is the holder's own clock, written before its lock: used only
// when it falls between the fault and when the harness saw the holder.
func TestHolderAt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	seen := t0.Add(3 * time.Second)
	for _, tc := range []struct {
		since, want time.Time
	}{
		{t0.Add(time.Second), t0.Add(time.Second)},
		{t0.Add(-time.Second), seen}, // before the fault: a stale value
		{seen.Add(time.Second), seen},
		{time.Time{}, seen},
	} {
		if got := (Holder{Session: "s", Since: tc.since, Seen: seen}).At(t0); !got.Equal(tc.want) {
			t.Errorf("Since %v: At %v, want %v", tc.since, got, tc.want)
		}
	}
}
