package offsetlog

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Move is one shard's handler run followed by one on another worker.
type Move struct {
	Shard    shard.ID
	From, To string // worker IDs
	// Gap is how long no handler ran: from the first run's end to the
	// second's start (0 when they overlap by the clocks).
	Gap time.Duration
	At  int64 // the second run's start, ns
}

// Moves reads ivs, the handler runs of every worker process (each ended,
// or still running with End math.MaxInt64), for what happened after since
// (ns): each shard's runs in order of their start, a pair of consecutive
// runs whose second started after since is a move when the two ran on
// different worker IDs (a worker that stopped and came back under its ID
// moved nothing), and a restart otherwise. A run that never ended followed
// by another is taken to end when the next began. It returns the moves and
// the restarts, each in order of shard and time.
func Moves(ivs []Interval, since int64) (moves, restarts []Move) {
	byShard := map[shard.ID][]Interval{}
	for _, iv := range ivs {
		byShard[iv.Shard] = append(byShard[iv.Shard], iv)
	}
	for _, s := range slices.Sorted(maps.Keys(byShard)) {
		runs := byShard[s]
		slices.SortStableFunc(runs, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
		for i := 1; i < len(runs); i++ {
			prev, next := runs[i-1], runs[i]
			if next.Start <= since {
				continue
			}
			m := Move{Shard: s, From: prev.Worker, To: next.Worker, At: next.Start,
				Gap: time.Duration(max(0, next.Start-min(prev.End, next.Start)))}
			if prev.Worker != next.Worker {
				moves = append(moves, m)
			} else {
				restarts = append(restarts, m)
			}
		}
	}
	return moves, restarts
}

// Handoffs is Moves summed up: the moves after since, and the longest gap
// of a move or a restart, with its shard.
func Handoffs(ivs []Interval, since int64) (moves int, longest time.Duration, where shard.ID) {
	ms, rs := Moves(ivs, since)
	for _, m := range append(ms, rs...) {
		if m.Gap > longest || m.Gap == longest && longest > 0 && m.Shard < where {
			longest, where = m.Gap, m.Shard
		}
	}
	return len(ms), longest, where
}
