package etcd

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestWaitApplied: the pacing between Assign's transactions waits for
// the workers' acquisitions to be committed (or applySettle), then for the
// apply to catch up, never longer than applySettle + applyWait in all; a
// status that fails midway ends it; one that cannot be read at all (etcd
// with auth answers it for root only) gives the settle time and then a
// linearizable read.
func TestWaitApplied(t *testing.T) {
	type point struct {
		at                 time.Duration
		committed, applied uint64
	}
	cases := []struct {
		name   string
		expect int
		series []point // the status from each point's time on; none: status refused
		fail   time.Duration
		read   time.Duration // how long the fallback read takes
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
		{name: "status fails while waiting", expect: 1,
			series: []point{{0, 100, 100}, {10 * time.Millisecond, 500, 100}}, fail: 300 * time.Millisecond, want: 300 * time.Millisecond},
		{name: "no status: the settle time, then a read", expect: 1, read: 400 * time.Millisecond, want: applySettle + 400*time.Millisecond},
		{name: "no status and a read that hangs: bounded", expect: 1, read: time.Hour, want: applySettle + applyWait},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				begin := time.Now()
				status := func(context.Context) (uint64, uint64, error) {
					now := time.Since(begin)
					if tc.series == nil || tc.fail > 0 && now >= tc.fail {
						return 0, 0, errors.New("refused")
					}
					var p point
					for _, q := range tc.series {
						if q.at <= now {
							p = q
						}
					}
					return p.committed, p.applied, nil
				}
				read := func(ctx context.Context) error {
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(tc.read):
						return nil
					}
				}
				waitApplied(context.Background(), tc.expect, status, read)
				if got := time.Since(begin); got < tc.want || got > tc.want+applyPoll {
					t.Errorf("waited %v, want %v (to within one poll, %v)", got, tc.want, applyPoll)
				}
			})
		})
	}
}

// TestPacedWaitsAfterManyPlacements: Assign's transactions wait only
// after one that gave paceAfterLocks free shards or more (a cold start's),
// each wait expecting the workers that were given any; a join's or a
// failover's keys, giving few or none, go back to back.
func TestPacedWaitsAfterManyPlacements(t *testing.T) {
	keys := func(n int) [][]clientv3.Op { return make([][]clientv3.Op, n) }
	cases := []struct {
		name    string
		batches []int // keys per batch
		frees   []int // per key, in order
		want    []int // the takers of each wait, in order
	}{
		{name: "a cold start", batches: []int{3, 3, 2}, frees: []int{400, 400, 400, 600, 0, 600, 400, 400}, want: []int{3, 2}},
		{name: "a join: hand-offs only", batches: []int{3, 2}, frees: []int{0, 0, 0, 0, 0}},
		{name: "a failover: a shard to each", batches: []int{3, 2}, frees: []int{1, 1, 1, 1, 1}},
		{name: "just under the bound", batches: []int{2, 1}, frees: []int{paceAfterLocks - 1, 0, 5000}},
		{name: "at the bound", batches: []int{2, 1}, frees: []int{paceAfterLocks - 1, 1, 5000}, want: []int{2}},
		{name: "one write", batches: []int{2}, frees: []int{5000, 5000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var bs [][][]clientv3.Op
			for _, n := range tc.batches {
				bs = append(bs, keys(n))
			}
			var waits []int
			writes := 0
			n, err := paced(bs, tc.frees, func(takers int) { waits = append(waits, takers) }, func([][]clientv3.Op) error { writes++; return nil })
			if err != nil || n != len(tc.frees) || writes != len(bs) {
				t.Fatalf("paced wrote %d keys in %d writes (err %v), want %d in %d", n, writes, err, len(tc.frees), len(bs))
			}
			if !slices.Equal(waits, tc.want) {
				t.Fatalf("waits for %v takers, want %v", waits, tc.want)
			}
		})
	}
}
