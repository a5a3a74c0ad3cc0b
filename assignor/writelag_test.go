package assignor

import (
	"testing"
	"time"
)

// TestWriteLagLengthensStuckAfter: after a slow write, StuckAfter grows by
// the time from the decision to the write's end until the keys it wrote
// have had a whole StuckAfter; a fast write in that window neither
// shortens nor extends it; afterwards the policy's StuckAfter holds again;
// and a write longer than StuckAfter counts as StuckAfter.
func TestWriteLagLengthensStuckAfter(t *testing.T) {
	const base = 10 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	var w writeLag
	if got := w.stuckAfter(base, t0); got != base {
		t.Fatalf("before any write: %v, want %v", got, base)
	}
	w.wrote(t0, at(9*time.Second), base)                                      // decided at 0, written by 9 s
	w.wrote(at(12*time.Second), at(12*time.Second+50*time.Millisecond), base) // fast, inside the window
	for _, c := range []struct {
		now  time.Duration
		want time.Duration
	}{
		{9 * time.Second, 19 * time.Second},
		{27 * time.Second, 19 * time.Second}, // a key written at 9 s is judged at 28 s
		{28 * time.Second, base},             // the fast write at 12 s did not extend it
	} {
		if got := w.stuckAfter(base, at(c.now)); got != c.want {
			t.Errorf("at %v: %v, want %v", c.now, got, c.want)
		}
	}
	w.wrote(at(40*time.Second), at(40*time.Second+100*time.Millisecond), base) // fast, after it
	if got := w.stuckAfter(base, at(41*time.Second)); got != base+100*time.Millisecond {
		t.Errorf("after the window, a fast write: %v, want %v", got, base+100*time.Millisecond)
	}
	w.wrote(at(50*time.Second), at(95*time.Second), base) // 45 s: longer than StuckAfter
	if got := w.stuckAfter(base, at(96*time.Second)); got != 2*base {
		t.Errorf("after a 45 s write: %v, want it counted as StuckAfter, %v", got, 2*base)
	}
}
