package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// settle lets virtual time pass and every goroutine reach a blocking point.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestConvergesTwelveWorkersOver128Shards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 128)
		for i := range 12 {
			f.start(fmt.Sprintf("w%02d", i), nil)
		}
		settle(30 * time.Second)
		owners := f.owners()
		if len(owners) != 128 {
			t.Fatalf("%d of 128 shards owned after 30s", len(owners))
		}
		c := counts(owners)
		if len(c) != 12 || spread(c) > 1 {
			t.Fatalf("owned counts %v: want 12 workers within one of each other", c)
		}
		for id, m := range f.running {
			if got := len(m.w.Status().Owned()); got != c[id] {
				t.Errorf("worker %s reports %d owned shards, the coordinator says %d", id, got, c[id])
			}
		}
	})
}

func TestJoinAndLeaveMoveOnlyWhatThePlannerBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 128)
		for i := range 12 {
			f.start(fmt.Sprintf("w%02d", i), nil)
		}
		settle(30 * time.Second)
		before := f.owners()

		f.start("w12", nil)
		settle(30 * time.Second)
		afterJoin := f.owners()
		moved := 0
		for id, w := range afterJoin {
			if before[id] != w {
				moved++
				if w != "w12" {
					t.Errorf("join moved %s from %s to %s, not to the joiner", id, before[id], w)
				}
			}
		}
		if bound := (128 + 12) / 13; moved > bound || len(afterJoin) != 128 || spread(counts(afterJoin)) > 1 {
			t.Fatalf("join: moved %d shards (bound ⌈128/13⌉=%d), %d owned, counts %v", moved, bound, len(afterJoin), counts(afterJoin))
		}

		leaver := "w05"
		if err := f.stop(leaver); err != nil {
			t.Fatalf("stop %s: %v", leaver, err)
		}
		settle(30 * time.Second)
		afterLeave := f.owners()
		for id, w := range afterLeave {
			if afterJoin[id] != w && afterJoin[id] != leaver {
				t.Errorf("leave moved %s from %s to %s: only the leaver's shards may move", id, afterJoin[id], w)
			}
		}
		if len(afterLeave) != 128 || spread(counts(afterLeave)) > 1 {
			t.Fatalf("leave: %d owned, counts %v", len(afterLeave), counts(afterLeave))
		}
	})
}

func TestGracefulShutdownHandsOffWithinAWatchRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 16)
		f.start("a", nil)
		f.start("b", nil)
		settle(20 * time.Second)
		if c := counts(f.owners()); c["a"] != 8 || c["b"] != 8 {
			t.Fatalf("before shutdown: counts %v, want 8 each", c)
		}
		stopped := time.Now()
		if err := f.stop("a"); err != nil {
			t.Fatalf("stop a: %v", err)
		}
		// Far less than the TTL (10 s): a released shard needs no expiry.
		settle(500 * time.Millisecond)
		if c := counts(f.owners()); c["b"] != 16 {
			t.Fatalf("%v after a's shutdown: b owns %d of 16", time.Since(stopped), c["b"])
		}
		for _, e := range f.events.list() {
			if e.worker == "a" && !e.start && !isRevoked(e.cause) {
				t.Errorf("a's handler on %s ended with %v, want ErrRevoked", e.shard, e.cause)
			}
		}
	})
}

func TestStalledRenewalStepsDownBeforeTheSessionExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		a := f.start("a", nil)
		settle(10 * time.Second)
		sid := a.w.Status().Session
		f.start("b", nil)
		settle(20 * time.Second)
		aShards := map[shard.ID]bool{}
		for id, w := range f.owners() {
			if w == "a" {
				aShards[id] = true
			}
		}
		if len(aShards) != 4 {
			t.Fatalf("a owns %d shards before the stall, want 4", len(aShards))
		}

		// Every call of a's now hangs: a slow, then silent coordinator.
		stalled := time.Now()
		a.faults.Set(faults.Hang)
		var lostAt time.Time
		for range 100 {
			settle(100 * time.Millisecond)
			if a.w.Status().State == worker.StateJoining {
				lostAt = time.Now()
				break
			}
		}
		if lostAt.IsZero() {
			t.Fatal("a never stepped down while its renewals hung")
		}
		if d := lostAt.Sub(stalled); d > testPolicy.StepDownAfter()+200*time.Millisecond {
			t.Errorf("a stepped down %v after the stall, later than the local deadline %v", d, testPolicy.StepDownAfter())
		}
		if !hasSession(f.coord.LiveSessions(), sid) {
			t.Errorf("session %s already expired on the coordinator when a stepped down: too late", sid)
		}

		settle(20 * time.Second)
		var aEnd, bStart = map[shard.ID]event{}, map[shard.ID]event{}
		for _, e := range f.events.list() {
			if aShards[e.shard] && e.worker == "a" && !e.start {
				aEnd[e.shard] = e
			}
			if aShards[e.shard] && e.worker == "b" && e.start {
				bStart[e.shard] = e
			}
		}
		for id := range aShards {
			end, ok := aEnd[id]
			if !ok || !isLost(end.cause) {
				t.Errorf("%s: a's handler ended with %v, want ErrLost", id, end.cause)
				continue
			}
			start, ok := bStart[id]
			if !ok {
				t.Errorf("%s: b never took over", id)
				continue
			}
			if !end.at.Before(start.at) {
				t.Errorf("%s: b started at %v, before a saw ErrLost at %v", id, start.at, end.at)
			}
		}
	})
}

func hasSession(ids []shard.SessionID, id shard.SessionID) bool {
	for _, s := range ids {
		if s == id {
			return true
		}
	}
	return false
}

func TestFailingHandlerIsRestartedWhileOwned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 1)
		var calls atomic.Int32
		var tokens sync.Map
		f.start("a", worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			tokens.Store(c.Token, true)
			if calls.Add(1) <= 3 {
				return errors.New("boom")
			}
			if calls.Load() == 4 {
				panic("handler bug")
			}
			<-ctx.Done()
			return nil
		}))
		settle(30 * time.Second)
		if n := calls.Load(); n != 5 {
			t.Fatalf("handler ran %d times, want 5 (3 errors and a panic, each restarted)", n)
		}
		n := 0
		tokens.Range(func(any, any) bool { n++; return true })
		if n != 1 {
			t.Errorf("restarts used %d tokens: a restart must keep the claim", n)
		}
	})
}

// TestPausedWorkerLateCommitIsRejected is the paused-leader story: a worker
// freezes with a commit in hand, its session expires, the new owner fences
// and loads, and the late commit is refused — by the claim itself, which
// knows its authority ended at the local deadline, before it reaches the
// store (the store's fence is the second line, tested in offsets).
func TestPausedWorkerLateCommitIsRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 2)
		var gate faults.Gate
		var mu sync.Mutex
		lastAccepted := map[shard.ID]int64{}
		var stale, lost, acceptedAfterPause atomic.Int32
		var paused atomic.Bool
		var pausedTokens sync.Map // the tokens a held when it froze
		committer := worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			off := c.Start.Offset
			for ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
				off++
				gate.Wait(context.Background()) // a pause can strike between computing and sending
				err := c.Commit(context.WithoutCancel(ctx), off)
				switch {
				case err == nil:
					mu.Lock()
					lastAccepted[c.Shard] = off
					mu.Unlock()
					if _, old := pausedTokens.Load(c.Token); old && paused.Load() {
						acceptedAfterPause.Add(1)
					}
				case errors.Is(err, offsets.ErrStaleToken):
					stale.Add(1)
					return nil
				case errors.Is(err, worker.ErrLost):
					lost.Add(1)
					return nil
				default:
					return err
				}
			}
			return nil
		})
		a := f.start("a", committer)
		settle(5 * time.Second)
		if c := counts(f.owners()); c["a"] != 2 {
			t.Fatalf("a owns %v, want both shards", c)
		}

		for _, st := range a.w.Status().Shards {
			pausedTokens.Store(st.Token, true)
		}
		paused.Store(true)
		gate.Close()
		a.faults.Set(faults.Hang)
		synctest.Wait()
		mu.Lock()
		before := map[shard.ID]int64{}
		for k, v := range lastAccepted {
			before[k] = v
		}
		mu.Unlock()

		f.start("b", f.events.waiting("b"))
		settle(testPolicy.TTL + testLockDelay + 5*time.Second)
		starts := map[shard.ID]event{}
		for _, e := range f.events.list() {
			if e.worker == "b" && e.start {
				starts[e.shard] = e
			}
		}
		if len(starts) != 2 {
			t.Fatalf("b took %d of a's 2 shards after a's TTL", len(starts))
		}
		for id, e := range starts {
			if e.offset < before[id] {
				t.Errorf("%s: b loaded offset %d, a had committed %d before the fence: lost", id, e.offset, before[id])
			}
		}

		for id, e := range starts {
			cp, err := f.store.Load(context.Background(), id)
			if err != nil || cp.Floor != e.token || cp.Offset != e.offset {
				t.Errorf("%s: store holds %+v (err %v), want b's fence %d over offset %d", id, cp, err, e.token, e.offset)
			}
		}

		gate.Open()
		a.faults.Set(faults.Healthy)
		settle(time.Second)
		if lost.Load() != 2 || stale.Load() != 0 {
			t.Errorf("late commits: %d refused as lost by the claim, %d reached the store and were refused as stale; want 2 and 0",
				lost.Load(), stale.Load())
		}
		if n := acceptedAfterPause.Load(); n != 0 {
			t.Errorf("%d commits of the paused owner's old claims were accepted after the pause", n)
		}
		for id, e := range starts {
			if cp, err := f.store.Load(context.Background(), id); err != nil || cp.Floor < e.token {
				t.Errorf("%s: store floor went below b's fence %d: %+v (err %v)", id, e.token, cp, err)
			}
		}
	})
}

func TestBadInputIsRefusedWithTheValue(t *testing.T) {
	valid := func() worker.Config {
		f := newFleet(t, 8)
		c := f.config("a", worker.HandlerFunc(func(context.Context, *worker.Claim) error { return nil }))
		c.Coordinator = f.coord
		return c
	}
	for _, tc := range []struct {
		name  string
		edit  func(*worker.Config)
		wants []string
	}{
		{"empty id", func(c *worker.Config) { c.ID = "" }, []string{`worker id ""`}},
		{"slash in id", func(c *worker.Config) { c.ID = "a/b" }, []string{`"a/b"`}},
		{"zero shards", func(c *worker.Config) { c.Fleet.Shards = 0 }, []string{"shard count 0"}},
		{"policy breaks the rule", func(c *worker.Config) {
			c.Policy = shard.LeasePolicy{TTL: 10 * time.Second, RenewEvery: 4 * time.Second, PauseBudget: 3 * time.Second}
		}, []string{"11s exceeds ttl 10s by 1s"}},
		{"every problem at once", func(c *worker.Config) { c.ID = ""; c.Handler = nil; c.Offsets = nil },
			[]string{"worker id", "handler is nil", "offset store is nil"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.edit(&cfg)
			_, err := worker.New(cfg)
			if !errors.Is(err, worker.ErrInvalidConfig) {
				t.Fatalf("New: %v, want ErrInvalidConfig", err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestDuplicateIDAndForeignConfigDoNotDisturbOwners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		f.start("a", nil)
		settle(10 * time.Second)
		before := f.snapshot().Shards

		run := func(cfg worker.Config) error {
			cfg.Coordinator = f.coord
			w, err := worker.New(cfg)
			if err != nil {
				return err
			}
			return w.Run(context.Background())
		}
		other := f.config("b", f.events.waiting("b"))
		other.Fleet.Shards = 16
		if err := run(other); !errors.Is(err, shard.ErrConfigMismatch) || !strings.Contains(err.Error(), "16") {
			t.Errorf("a worker with 16 shards joining an 8-shard fleet: %v, want ErrConfigMismatch naming 16", err)
		}
		twin := f.config("a", f.events.waiting("a-twin"))
		if err := run(twin); !errors.Is(err, shard.ErrMemberExists) || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("a second worker with id a: %v, want ErrMemberExists naming it", err)
		}
		after := f.snapshot().Shards
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("shard keys changed under bad input:\nbefore %v\nafter  %v", before, after)
		}
	})
}

// TestPermissionDeniedStopsTheWorker: credentials the coordinator refuses
// are not a transient failure. Whether refused at start (the fleet config)
// or later (a new session after a loss), Run returns the error at once
// instead of retrying forever as if the coordinator were unreachable.
func TestPermissionDeniedStopsTheWorker(t *testing.T) {
	for _, op := range []shard.Op{shard.OpConfigure, shard.OpCreateSession, shard.OpJoin} {
		t.Run(string(op), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t, 8)
				cfg := f.config("a", f.events.waiting("a"))
				cfg.Coordinator = refusing(f.coord, op)
				w, err := worker.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- w.Run(context.Background()) }()
				select {
				case err := <-done:
					if !errors.Is(err, shard.ErrPermissionDenied) || !strings.Contains(err.Error(), "token lacks") {
						t.Fatalf("Run = %v, want the coordinator's ErrPermissionDenied", err)
					}
				case <-time.After(time.Minute):
					t.Fatalf("Run still retrying a refused %s after a minute", op)
				}
				if held := f.owners(); len(held) != 0 {
					t.Errorf("shards held after the refusal: %v", held)
				}
			})
		})
	}
}

// refusing denies one operation for lack of permission, as an ACL would.
func refusing(c shard.Coordinator, op shard.Op) shard.Coordinator {
	return shard.Intercept(c, func(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
		if call.Op == op {
			return fmt.Errorf("%w: %s: the token lacks key write", shard.ErrPermissionDenied, op)
		}
		return invoke(ctx)
	})
}
