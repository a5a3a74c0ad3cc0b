package offsetlog

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Handoffs reads ivs, the handler runs of every worker process (each
// ended, or still running with End math.MaxInt64), for what happened
// after since (ns): each shard's runs in order of their start, a pair of
// consecutive runs whose second started after since counts as a move when
// the two ran on different worker IDs (a worker that stopped and came
// back under its ID moved nothing), and the time between the first's end
// and the second's start is a gap with no handler running (0 when they
// overlap by the clocks). A run that never ended followed by another is
// taken to end when the next began. It returns the moves, the longest gap
// and its shard.
func Handoffs(ivs []Interval, since int64) (moves int, longest time.Duration, where shard.ID) {
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
			if prev.Worker != next.Worker {
				moves++
			}
			if gap := time.Duration(max(0, next.Start-min(prev.End, next.Start))); gap > longest {
				longest, where = gap, s
			}
		}
	}
	return moves, longest, where
}
