package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemoKeepsEveryInvariant plays the whole 20 s schedule on the virtual
// clock for several seeds: crash, pause past the TTL with commits in flight,
// join. Each run must end settled, with late commits rejected and none
// accepted.
func TestDemoKeepsEveryInvariant(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 42} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sum, err := Run(context.Background(), Options{Duration: 20 * time.Second, Seed: seed, Store: offmem.New()}, io.Discard)
				if err != nil {
					t.Fatalf("seed %d: %v\n%s", seed, err, sum.Text())
				}
				switch {
				case sum.Owned != 128 || sum.MaxMinusMin > 1:
					t.Errorf("not settled: %d owned, max−min %d", sum.Owned, sum.MaxMinusMin)
				case sum.StaleCommitsRejected < 1:
					t.Errorf("the paused worker's late commits were not rejected: %+v", sum)
				case sum.Failovers < 1:
					t.Errorf("no failover after a crash: %+v", sum)
				case len(sum.Faults) != 3:
					t.Errorf("faults played: %q, want crash, pause, join", sum.Faults)
				}
			})
		})
	}
}

// TestAuditorCatchesAStoreThatIgnoresTokens proves the demo's checks can
// fail: behind a store that accepts everything, the paused worker's late
// commits are accepted and the summary says so.
func TestAuditorCatchesAStoreThatIgnoresTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sum, err := Run(context.Background(), Options{Duration: 20 * time.Second, Seed: 7, Store: &unfenced{offmem.New()}}, io.Discard)
		if err == nil || sum.StaleCommitsAccepted == 0 {
			t.Fatalf("an unfenced store passed the demo: err %v, summary %+v", err, sum)
		}
		if !strings.Contains(err.Error(), "stale commits accepted") {
			t.Errorf("error %q does not name the stale commits", err)
		}
	})
}

// unfenced rewrites every token to "always the newest", defeating the fence.
type unfenced struct{ *offmem.Store }

func (u *unfenced) Fence(ctx context.Context, s shard.ID, token shard.Token) error { return nil }
func (u *unfenced) Commit(ctx context.Context, s shard.ID, _ shard.Token, offset int64) error {
	return u.Store.Commit(ctx, s, 1<<62, offset)
}

func TestBadOptionsNameTheValue(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Workers: 1}, "--workers 1"},
		{Options{Shards: -3}, "--shards -3"},
		{Options{Duration: 5 * time.Second}, "--duration 5s: want 0 (until Ctrl-C) or at least 20s, which fits the demo's faults (a crash at 5s"},
		{Options{Policy: shard.LeasePolicy{TTL: time.Second, RenewEvery: time.Second, PauseBudget: time.Second}}, "exceeds ttl 1s"},
	} {
		_, err := Run(context.Background(), tc.o, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v) = %v, want an error naming %q", tc.o, err, tc.want)
		}
	}
}
