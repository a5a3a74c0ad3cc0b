package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// loadWrites counts the writes of loads (ReportLoad) once the coordinator
// took them, so that a test that sees the count move also sees the write;
// and the member-key writes that carry loads, which there must be none of.
type loadWrites struct {
	mu        sync.Mutex
	n, joined int
}

func (c *loadWrites) wrap(co shard.Coordinator) shard.Coordinator {
	return shard.Intercept(co, c.intercept)
}

func (c *loadWrites) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	err := invoke(ctx)
	c.mu.Lock()
	switch {
	case call.Op == shard.OpReportLoad && err == nil:
		c.n++
	case call.Op == shard.OpJoin && call.Member.Load != nil:
		c.joined++
	}
	c.mu.Unlock()
	return err
}

func (c *loadWrites) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// memberWrites is how many member-key writes carried loads.
func (c *loadWrites) memberWrites() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.joined
}

// reporting is a handler that reports *load (per shard: load × (1 + the
// shard's number)) every 500 ms until its claim ends.
func reporting(load *atomic.Int64) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		n := float64(c.Shard[len(c.Shard)-1] - '0')
		for {
			c.ReportLoad(float64(load.Load()) * (1 + n))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
}

// startReporting starts worker "a", balancing load, over a fleet of n
// shards whose handlers report load (10 at first, per reporting), and
// counts its load writes.
func startReporting(t *testing.T, n int) (*fleet, *atomic.Int64, *loadWrites) {
	f := newFleet(t, n)
	load := &atomic.Int64{}
	load.Store(10)
	cfg := f.config("a", reporting(load))
	cfg.LoadBalance = &shard.LoadBalance{}
	writes := &loadWrites{}
	f.startWrapped(cfg, writes.wrap)
	return f, load, writes
}

// shownLoad is shard id's load as worker a's loads key shows it.
func shownLoad(f *fleet, id shard.ID) float64 {
	ms, _ := f.snapshot().Member("a")
	return ms.Load[id]
}

// TestLoadWritesBounded: a worker writes its shards' loads to its loads
// key (never to its member key), writes nothing while they hold still, at
// most once per report interval while they change, and keeps an
// operator's cordon.
func TestLoadWritesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, load, writes := startReporting(t, 4)
		settle(30 * time.Second)
		ms, _ := f.snapshot().Member("a")
		if len(ms.Load) != 4 || ms.Load["stream/shard-002"] != 30 {
			t.Fatalf("member record's loads after 30 s: %v, want 4 shards, stream/shard-002 at 10·3", ms.Load)
		}
		settled := writes.count()
		if settled < 1 || settled > 2 {
			t.Fatalf("%d load writes while the shards started, want 1 or 2", settled)
		}

		settle(60 * time.Second)
		if n := writes.count() - settled; n != 0 {
			t.Fatalf("%d load writes in a minute of unchanged loads, want none", n)
		}

		m := ms.Member
		m.Cordon = &shard.Mark{By: "ops", At: time.Now(), Reason: "disk"}
		if err := f.coord.Members().Join(context.Background(), ms.Session, m); err != nil {
			t.Fatalf("cordoning a: %v", err)
		}
		before := writes.count()
		for i := range 60 {
			load.Store(int64(10 + 2*i)) // a ramp: every 10 s sample differs
			settle(time.Second)
		}
		n := writes.count() - before
		if n < 5 || n > 7 {
			t.Fatalf("%d load writes in a minute of changing loads, want one per 10 s report interval (5 to 7)", n)
		}
		ms, _ = f.snapshot().Member("a")
		if ms.Cordon == nil || ms.Cordon.By != "ops" {
			t.Fatalf("the operator's cordon after load writes: %+v, want it kept", ms.Cordon)
		}
		if v := ms.Load["stream/shard-000"]; v <= 80 || v >= 128 {
			t.Fatalf("stream/shard-000's load after a ramp from 10 to 128: %v, want it lagging the ramp by about a half-life", v)
		}
		if n := writes.memberWrites(); n != 0 {
			t.Fatalf("%d member-key writes carried loads, want none (loads have a key of their own)", n)
		}
	})
}

// TestLoadFromCommits: a handler that never reports has its commit rate
// carried as its load.
func TestLoadFromCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 1)
		cfg := f.config("a", worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			for off := int64(1); ; off++ {
				if err := c.Commit(ctx, off); err != nil {
					return err
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(250 * time.Millisecond):
				}
			}
		}))
		cfg.LoadBalance = &shard.LoadBalance{}
		f.startWith(cfg)
		settle(60 * time.Second)
		ms, _ := f.snapshot().Member("a")
		if v := ms.Load["stream/shard-000"]; v < 3.8 || v > 4.2 {
			t.Fatalf("load of a handler committing 4 times a second: %v (record %v), want about 4", v, ms.Load)
		}
	})
}

// TestNoLoadWritesInCountMode: a fleet that balances counts writes no
// loads, so its coordinator traffic is what it was.
func TestNoLoadWritesInCountMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 4)
		var load atomic.Int64
		load.Store(10)
		writes := &loadWrites{}
		f.startWrapped(f.config("a", reporting(&load)), writes.wrap)
		settle(60 * time.Second)
		if n := writes.count(); n != 0 {
			t.Fatalf("%d load writes without LoadBalance, want none", n)
		}
	})
}

// TestLoadShiftReportedSoon: a shard's load that moves to a new level
// (tripled, then back) is written within about a second rather than at
// the next regular report, once per report interval; a second shift in the
// same interval waits for the regular report.
func TestLoadShiftReportedSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, load, writes := startReporting(t, 1)
		settle(30 * time.Second)
		shown := func() float64 { return shownLoad(f, "stream/shard-000") }
		if v := shown(); v != 10 {
			t.Fatalf("load after 30 s: %v, want 10", v)
		}
		// A first new level (20 % of a steady load), written early; then
		// its interval passes, so the next regular report is about 10 s
		// away and an early one is allowed again.
		load.Store(12)
		for n := writes.count(); writes.count() == n; {
			time.Sleep(100 * time.Millisecond)
		}
		if v := shown(); v != 12 {
			t.Fatalf("after a change of 20 %% of a steady load: %v, want 12 written early", v)
		}
		time.Sleep(11 * time.Second)
		load.Store(36) // tripled: a new level
		time.Sleep(2500 * time.Millisecond)
		if v := shown(); v != 36 {
			t.Fatalf("2.5 s after the load tripled: %v, want 36 (written early)", v)
		}
		load.Store(12) // back, in the same interval: no second early write
		time.Sleep(2500 * time.Millisecond)
		if v := shown(); v != 36 {
			t.Fatalf("2.5 s after a second shift in the same interval: %v, want still 36 (one early write per interval)", v)
		}
		time.Sleep(8 * time.Second)
		if v := shown(); v != 12 {
			t.Fatalf("after the regular report: %v, want 12", v)
		}
	})
}

// TestLoadDriftSettles: a change too small for a write at the next report
// (3 % of the total) is written once the last write is three report
// intervals old, so the assignor's view is not wrong for good.
func TestLoadDriftSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, load, writes := startReporting(t, 1)
		settle(30 * time.Second)
		shown := func() float64 { return shownLoad(f, "stream/shard-000") }
		load.Store(100) // a new level: written within a second or two
		time.Sleep(3 * time.Second)
		if v := shown(); v != 100 {
			t.Fatalf("3 s after a new level: %v, want 100", v)
		}
		n := writes.count()
		load.Store(103) // 3 %: under loadChange, over loadSettle
		time.Sleep(15 * time.Second)
		if v := shown(); v != 100 || writes.count() != n {
			t.Fatalf("15 s after a 3 %% drift: shown %v after %d writes, want still 100 and no write", v, writes.count()-n)
		}
		time.Sleep(30 * time.Second)
		if v := shown(); v < 102 {
			t.Fatalf("45 s after a 3 %% drift: %v, want it settled (over 102)", v)
		}
	})
}

// TestLoadFollowedAfterShift: for three report intervals after a shard's
// load moved to a new level, a drift of under loadChange (another shard's
// smoothed figure catching up with the same change in traffic) is written
// at the next report, not three intervals after the last write.
func TestLoadFollowedAfterShift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 2)
		var loads [2]atomic.Int64 // per shard, in tenths
		loads[0].Store(1000)
		loads[1].Store(1000)
		cfg := f.config("a", worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			n := c.Shard[len(c.Shard)-1] - '0'
			for {
				c.ReportLoad(float64(loads[n].Load()) / 10)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(500 * time.Millisecond):
				}
			}
		}))
		cfg.LoadBalance = &shard.LoadBalance{}
		writes := &loadWrites{}
		f.startWrapped(cfg, writes.wrap)
		settle(40 * time.Second)
		shown := func(id shard.ID) float64 { return shownLoad(f, id) }
		loads[0].Store(400)  // a new level on shard 0: written within a second or two
		loads[1].Store(1045) // +4.5 % on shard 1, under quietChange: smoothed, half seen after 10 s
		time.Sleep(3 * time.Second)
		if v := shown("stream/shard-000"); v != 40 {
			t.Fatalf("3 s after shard 0's load fell to 40 %%: %v, want 40", v)
		}
		before := shown("stream/shard-001")
		time.Sleep(11 * time.Second) // one regular report: shard 1 moved ~2.5 % of itself, ~1.7 % of the total
		if v := shown("stream/shard-001"); v <= before {
			t.Fatalf("a report after the shift: shard 1 still shown at %v, want its drift written (over %v)", v, before)
		}
	})
}
