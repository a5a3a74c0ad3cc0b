package reshard

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestUncovered: the processing a shard lost in a window is the time no
// run of its handler covers, whatever the runs' order, overlaps and ends.
func TestUncovered(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := newRecorder()
	const id shard.ID = "s"
	r.runs[id] = []span{{at(5), at(6)}, {at(0), at(2)}, {at(1.5), at(3)}, {at(7), time.Time{}}}
	for _, tc := range []struct {
		from, to float64
		want     time.Duration
	}{
		{0, 3, 0},
		{0, 5, 2 * time.Second},     // 3..5
		{0, 10, 3 * time.Second},    // 3..5, 6..7; the last run is still going
		{2.5, 5.5, 2 * time.Second}, // 3..5
		{6.5, 6.8, 300 * time.Millisecond},
		{-1, 1, time.Second}, // before the first run
		{4, 4, 0},
	} {
		if got := r.uncovered(id, at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("uncovered(%v, %v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	if got := r.uncovered("none", at(0), at(2)); got != 2*time.Second {
		t.Errorf("a shard that never ran lost %v of 2 s", got)
	}
}
