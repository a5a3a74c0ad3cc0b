package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// loads is each shard's Load in st; an unmeasured shard is not in it.
func loads(st worker.Status) map[shard.ID]float64 {
	out := map[shard.ID]float64{}
	for _, sh := range st.Shards {
		if sh.Load != nil {
			out[sh.Shard] = *sh.Load
		}
	}
	return out
}

// TestStatusShowsReportedLoads: a shard whose handler reports has its
// load in Status and in its JSON, whether or not the fleet balances load;
// a Status kept from before keeps its figures when the loads change.
func TestStatusShowsReportedLoads(t *testing.T) {
	for _, balance := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			f := newFleet(t, 2)
			load := &atomic.Int64{}
			load.Store(10)
			cfg := f.config("a", reporting(load))
			if balance {
				cfg.LoadBalance = &shard.LoadBalance{}
			}
			a := f.startWith(cfg)
			settle(5 * time.Second)
			before := a.w.Status()
			got := loads(before)
			if len(got) != 2 || got["stream/shard-000"] != 10 || got["stream/shard-001"] != 20 {
				t.Fatalf("balance %v: loads in Status %v, want shard-000 at 10 and shard-001 at 20", balance, got)
			}
			js, err := json.Marshal(before)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(js), `"shard":"stream/shard-001","token":`) || !strings.Contains(string(js), `"load":20}`) {
				t.Errorf("balance %v: Status as JSON lacks shard-001's load: %s", balance, js)
			}
			load.Store(50)
			settle(time.Second)
			if got := loads(a.w.Status()); got["stream/shard-000"] != 50 {
				t.Errorf("balance %v: shard-000 after its load went to 50 (a new level): %v", balance, got)
			}
			if got := loads(before); got["stream/shard-000"] != 10 {
				t.Errorf("balance %v: a Status kept from before changed: %v", balance, got)
			}
		})
	}
}

// TestStatusLeavesAnUnmeasuredShardsLoadOut: a handler that never reports,
// in a worker that does not carry loads, has no figure: no Load, and no
// "load" in the JSON.
func TestStatusLeavesAnUnmeasuredShardsLoadOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 1)
		a := f.start("a", nil)
		settle(30 * time.Second)
		st := a.w.Status()
		if len(st.Owned()) != 1 {
			t.Fatalf("owned %v, want the one shard", st.Owned())
		}
		if got := loads(st); len(got) != 0 {
			t.Errorf("loads of a handler that never reported nor was sampled: %v, want none", got)
		}
		js, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(js), `"load"`) {
			t.Errorf("Status as JSON has a load: %s", js)
		}
	})
}

// TestStatusLeavesTheCommitRateAlone: reading Status often does not
// disturb the commit rate the worker measures for a handler that never
// reports (a status read must not close its counting window); Status
// shows the figure the worker carries.
func TestStatusLeavesTheCommitRateAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 1)
		cfg := f.config("a", committing(250*time.Millisecond))
		cfg.LoadBalance = &shard.LoadBalance{}
		a := f.startWith(cfg)
		var shown float64
		for range 600 { // a minute, reading every 100 ms
			settle(100 * time.Millisecond)
			shown = loads(a.w.Status())["stream/shard-000"]
		}
		ms, _ := f.snapshot().Member("a")
		if v := ms.Load["stream/shard-000"]; v < 3.8 || v > 4.2 {
			t.Fatalf("carried load of a handler committing 4 times a second, its Status read every 100 ms: %v, want about 4", v)
		}
		if shown < 3.8 || shown > 4.2 {
			t.Errorf("Status shows %v, want about 4, as carried", shown)
		}
	})
}

// committing is a handler that commits the next offset every period and
// never reports a load. (TestLoadFromCommits spells out the same handler.)
func committing(period time.Duration) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		for off := int64(1); ; off++ {
			if err := c.Commit(ctx, off); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(period):
			}
		}
	})
}
