package worker_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// hotShard is a handler whose shard stream/shard-000 reports a load of 50
// and every other shard 10, every 500 ms.
var hotShard = worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
	load := 10.0
	if c.Shard == "stream/shard-000" {
		load = 50
	}
	for {
		c.ReportLoad(load)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
})

// TestLoadBalancesMeasuredLoad: the loads handlers report reach the
// assignor through the member records, and it balances them: of two
// workers over six shards, one hot (50) and five at 10, one ends with the
// hot shard alone and the other with the rest (50 each), where count
// balance leaves 70 against 30. Without LoadBalance the same fleet stays
// at three shards each.
func TestLoadBalancesMeasuredLoad(t *testing.T) {
	for _, lb := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			f := newFleet(t, 6)
			for _, id := range []string{"a", "b"} {
				cfg := f.config(id, hotShard)
				if lb {
					cfg.LoadBalance = &shard.LoadBalance{}
				}
				f.startWith(cfg)
			}
			settle(5 * time.Minute)
			owners := f.owners()
			c := counts(owners)
			hot := owners["stream/shard-000"]
			switch {
			case len(owners) != 6:
				t.Fatalf("load balance %v: %d shards owned, want 6", lb, len(owners))
			case lb && c[hot] != 1:
				t.Fatalf("load balance: the hot shard's worker %s holds %d shards (%v), want it alone: 50 against 5 × 10", hot, c[hot], owners)
			case !lb && spread(c) != 0:
				t.Fatalf("count balance: %v, want 3 each", c)
			}
			if lb {
				snap := f.snapshot()
				d, err := assignor.Plan(snap, shard.BalancePolicy{Load: &shard.LoadBalance{}}, time.Now())
				if err != nil || d.Band == nil {
					t.Fatalf("the assignor's plan of the fleet: %v, band %+v", err, d.Band)
				}
				lo, hi := slices.Min(slices.Collect(maps.Values(d.Band.Ratio))), slices.Max(slices.Collect(maps.Values(d.Band.Ratio)))
				if lo < 0.9 || hi > 1.1 {
					t.Fatalf("load spread as the assignor judges the member records %v–%v (pinned %v), want within ±10 %%", lo, hi, d.Band.Pinned)
				}
			}
		})
	}
}
