package offsetlog

import (
	"math"
	"testing"
	"time"
)

// TestMoves: a run followed by one on another worker is a move, by the
// same worker a restart; a gap is from an end to the next start, 0 when
// they overlap, and a run still going ends when the next begins; runs
// that started before since are not counted.
func TestMoves(t *testing.T) {
	ms := int64(time.Millisecond)
	ivs := []Interval{
		{Shard: "s/shard-001", Worker: "a", Start: 0, End: 10 * ms},
		{Shard: "s/shard-001", Worker: "b", Start: 40 * ms, End: 100 * ms},
		{Shard: "s/shard-001", Worker: "b", Start: 150 * ms, End: math.MaxInt64},
		{Shard: "s/shard-002", Worker: "b", Start: 0, End: math.MaxInt64},
		{Shard: "s/shard-002", Worker: "a", Start: 20 * ms, End: math.MaxInt64},
		{Shard: "s/shard-003", Worker: "a", Start: 0, End: 5 * ms},
		{Shard: "s/shard-003", Worker: "c", Start: 7 * ms, End: math.MaxInt64},
	}
	moves, restarts := Moves(ivs, 6*ms)
	if len(moves) != 3 || len(restarts) != 1 {
		t.Fatalf("%d moves, %d restarts, want 3 and 1: %+v %+v", len(moves), len(restarts), moves, restarts)
	}
	for i, want := range []Move{
		{Shard: "s/shard-001", From: "a", To: "b", Gap: 30 * time.Millisecond, At: 40 * ms},
		{Shard: "s/shard-002", From: "b", To: "a", Gap: 0, At: 20 * ms},
		{Shard: "s/shard-003", From: "a", To: "c", Gap: 2 * time.Millisecond, At: 7 * ms},
	} {
		if moves[i] != want {
			t.Errorf("move %d: %+v, want %+v", i, moves[i], want)
		}
	}
	if r := restarts[0]; r.Gap != 50*time.Millisecond || r.To != "b" {
		t.Errorf("restart %+v, want b's after 50ms", r)
	}
	if n, longest, where := Handoffs(ivs, 6*ms); n != 3 || longest != 50*time.Millisecond || where != "s/shard-001" {
		t.Errorf("Handoffs: %d, %v, %s; want 3, 50ms, s/shard-001", n, longest, where)
	}
	if moves, _ := Moves(ivs, 30*ms); len(moves) != 1 {
		t.Errorf("since 30ms: %d moves, want shard-001's alone", len(moves))
	}
}
