package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestWatchSpacing: the wait after a wake-up grows with live members ×
// keys, never drops below the coalescing time, and a non-positive rate
// turns the bound off.
func TestWatchSpacing(t *testing.T) {
	snap := func(live, dead, shards int) shard.Snapshot {
		var s shard.Snapshot
		for i := range live + dead {
			m := shard.MemberState{Member: shard.Member{ID: fmt.Sprintf("w%03d", i)}}
			if i < live {
				m.Session = shard.SessionID(fmt.Sprintf("s%03d", i))
			}
			s.Members = append(s.Members, m)
		}
		s.Shards = make([]shard.ShardState, shards)
		return s
	}
	const coalesce = 25 * time.Millisecond
	for _, tc := range []struct {
		name               string
		live, dead, shards int
		rate               float64
		want               time.Duration
	}{
		{"small fleet: the coalescing time", 12, 0, 128, DefaultWatchKeyRate, coalesce},
		{"12 × 4096", 12, 0, 4096, DefaultWatchKeyRate, time.Duration(12 * 4108 * 1000)},
		{"100 × 10,000", 100, 0, 10000, DefaultWatchKeyRate, time.Duration(100 * 10100 * 1000)},
		{"dead members are read, not reading", 10, 90, 10000, DefaultWatchKeyRate, time.Duration(10 * 10100 * 1000)},
		{"no bound", 100, 0, 10000, -1, coalesce},
	} {
		if got := watchSpacing(snap(tc.live, tc.dead, tc.shards), coalesce, tc.rate); got != tc.want {
			t.Errorf("%s: watchSpacing = %v, want %v", tc.name, got, tc.want)
		}
	}
}
