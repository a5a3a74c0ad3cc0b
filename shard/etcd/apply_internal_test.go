package etcd

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestWaitApplied: the pacing between Assign's transactions waits for
// the workers' acquisitions to be committed (or applySettle), then for the
// apply to catch up (or applyWait), and never longer; a status that cannot
// be read ends it at once.
func TestWaitApplied(t *testing.T) {
	type point struct {
		at                 time.Duration
		committed, applied uint64
	}
	cases := []struct {
		name   string
		expect int
		series []point // the status from each point's time on
		fail   time.Duration
		want   time.Duration
	}{
		{name: "caught up once the acquisitions are in", expect: 3,
			series: []point{{0, 100, 100}, {50 * time.Millisecond, 120, 100}, {400 * time.Millisecond, 120, 120}},
			want:   400 * time.Millisecond},
		{name: "nothing arrives: the settle time", expect: 3,
			series: []point{{0, 100, 100}}, want: applySettle},
		{name: "a backlog within the bound goes at once", expect: 2,
			series: []point{{0, 100, 100}, {20 * time.Millisecond, 100 + maxApplyBacklog, 100}}, want: 20 * time.Millisecond},
		{name: "a backlog that stays: bounded", expect: 1,
			series: []point{{0, 100, 100}, {10 * time.Millisecond, 500, 100}}, want: applySettle + applyWait},
		{name: "status fails at once", expect: 1, fail: 0, want: 0},
		{name: "status fails while waiting", expect: 1,
			series: []point{{0, 100, 100}, {10 * time.Millisecond, 500, 100}}, fail: 300 * time.Millisecond, want: 300 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				begin := time.Now()
				status := func() (uint64, uint64, bool) {
					now := time.Since(begin)
					if tc.series == nil || tc.fail > 0 && now >= tc.fail {
						return 0, 0, false
					}
					var p point
					for _, q := range tc.series {
						if q.at <= now {
							p = q
						}
					}
					return p.committed, p.applied, true
				}
				waitApplied(context.Background(), tc.expect, status)
				if got := time.Since(begin); got < tc.want || got > tc.want+applyPoll {
					t.Errorf("waited %v, want %v (to within one poll, %v)", got, tc.want, applyPoll)
				}
			})
		})
	}
}
