package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// These tests are about the promise that no two workers ever run one
// shard's handler at the same instant, whichever way a lease ends. They
// are written against workers, keys and handlers only, so any planner has
// to pass them.

// interval is one handler run of one claim.
type interval struct {
	worker     string
	token      shard.Token
	start, end time.Time // end zero: still running
}

// overlaps lists every pair of handler runs of one shard, under different
// tokens, that were running at the same instant.
func overlaps(evs []event) []string {
	runs := map[shard.ID]map[shard.Token]*interval{}
	for _, e := range evs {
		if runs[e.shard] == nil {
			runs[e.shard] = map[shard.Token]*interval{}
		}
		r := runs[e.shard][e.token]
		if r == nil {
			r = &interval{worker: e.worker, token: e.token}
			runs[e.shard][e.token] = r
		}
		if e.start {
			r.start = e.at
		} else {
			r.end = e.at
		}
	}
	var out []string
	for id, byToken := range runs {
		var list []*interval
		for _, r := range byToken {
			list = append(list, r)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].token < list[j].token })
		for i := 1; i < len(list); i++ {
			prev, next := list[i-1], list[i]
			if prev.end.IsZero() || prev.end.After(next.start) {
				out = append(out, fmt.Sprintf("%s: %s (token %d) ran until %v, %s (token %d) started at %v",
					id, prev.worker, prev.token, prev.end, next.worker, next.token, next.start))
			}
		}
	}
	return out
}

// TestSessionEndedByOthersNeverOverlaps: a worker cut off from the
// coordinator has its session destroyed by a third party (an operator, a
// failed node: the coordinator ends it long before its TTL). The worker
// cannot hear of it and runs its handlers until its local deadline; the
// lock-delay (at least the step-down deadline, by the policy's rule) keeps
// the next owner out until then. Run at every tenth of the renewal period
// after a renewal, so the destroy also lands right after one — the worst
// moment. It fails with a lock-delay below the policy's second rule
// (docs/reliability.md, "Every way a lease can end", row 1).
func TestSessionEndedByOthersNeverOverlaps(t *testing.T) {
	for k := range 20 {
		offset := time.Duration(k) * testPolicy.RenewEvery / 20
		t.Run(offset.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t, 4)
				a := f.start("a", nil)
				settle(5 * time.Second)
				b := f.start("b", nil)
				settle(10 * time.Second)
				if c := counts(f.owners()); c["a"] != 2 || c["b"] != 2 {
					t.Fatalf("before the fault: %v, want 2 each", c)
				}
				time.Sleep(offset)
				a.faults.Set(faults.Hang)
				sid := a.w.Status().Session
				if err := f.coord.Sessions().Destroy(context.Background(), sid); err != nil {
					t.Fatal(err)
				}
				cut := time.Now()
				settle(testPolicy.TTL + testPolicy.LockDelay + 5*time.Second)
				if c := counts(f.owners()); c["b"] != 4 {
					t.Fatalf("after a's session ended: %v, want b with all 4", c)
				}
				for _, o := range overlaps(f.events.list()) {
					t.Errorf("two workers ran one shard: %s", o)
				}
				for _, e := range f.events.list() {
					if e.worker == "a" && !e.start && e.at.Sub(cut) > testPolicy.StepDownAfter() {
						t.Errorf("a's handler of %s ran %v after the cut, past its step-down deadline %v", e.shard, e.at.Sub(cut), testPolicy.StepDownAfter())
					}
				}
				a.faults.Set(faults.Healthy)
				_ = b
			})
		})
	}
}

// TestSessionEndedByOthersNoticedAtOnce: a worker that can still reach the
// coordinator learns that its session was destroyed from its own member
// key, and steps down and rejoins with a new session at once, rather than
// at its next renewal or its local deadline.
func TestSessionEndedByOthersNoticedAtOnce(t *testing.T) {
	for k := range 10 {
		offset := time.Duration(k) * testPolicy.RenewEvery / 10
		t.Run(offset.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t, 4)
				a := f.start("a", nil)
				settle(5*time.Second + offset)
				old := a.w.Status().Session
				if err := f.coord.Sessions().Destroy(context.Background(), old); err != nil {
					t.Fatal(err)
				}
				ended := time.Now()
				settle(300 * time.Millisecond)
				var lostAt time.Time
				for _, e := range f.events.list() {
					if e.worker == "a" && !e.start && isLost(e.cause) && lostAt.IsZero() {
						lostAt = e.at
					}
				}
				if lostAt.IsZero() || lostAt.Sub(ended) > 50*time.Millisecond {
					t.Fatalf("a's handlers saw the loss at %v, %v after the destroy; want at once", lostAt, lostAt.Sub(ended))
				}
				m, ok := f.snapshot().Member("a")
				if !ok || !m.Live() || m.Session == old {
					t.Fatalf("300ms after its session was destroyed a's member key is %+v: want it held by a new session", m)
				}
			})
		})
	}
}

// TestDrainingHandlerLearnsOfLeaseLoss: a handler revoked for a hand-off
// (ErrRevoked) drains; while it does, the worker is cut off from the
// coordinator. At the local deadline the claim's Lost channel closes even
// though the handler's context already ended with another cause, and a
// Commit after it is refused with ErrLost without reaching the store.
func TestDrainingHandlerLearnsOfLeaseLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 2)
		var mu sync.Mutex
		var revokedAt, lostAt []time.Time
		var commitErrs []error
		h := worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			<-ctx.Done()
			if !isRevoked(context.Cause(ctx)) {
				return nil
			}
			mu.Lock()
			revokedAt = append(revokedAt, time.Now())
			mu.Unlock()
			<-c.Lost() // a long drain, cut short only by the loss
			err := c.Commit(context.Background(), 999)
			mu.Lock()
			lostAt = append(lostAt, time.Now())
			commitErrs = append(commitErrs, err)
			mu.Unlock()
			return nil
		})
		cfg := f.config("a", h)
		cfg.DrainTimeout = time.Minute
		a := f.startWith(cfg)
		settle(5 * time.Second)
		if c := counts(f.owners()); c["a"] != 2 {
			t.Fatalf("a owns %v, want both", c)
		}
		a.faults.Set(faults.Hang)
		cut := time.Now()
		a.cancel() // shutdown: every handler revoked, draining
		settle(testPolicy.TTL)

		mu.Lock()
		defer mu.Unlock()
		if len(revokedAt) != 2 || len(lostAt) != 2 {
			t.Fatalf("%d handlers revoked, %d saw Lost close; want 2 and 2", len(revokedAt), len(lostAt))
		}
		for i, at := range lostAt {
			if d := at.Sub(cut); d > testPolicy.StepDownAfter() {
				t.Errorf("a draining handler learned of the loss %v after the cut, past the step-down deadline %v", d, testPolicy.StepDownAfter())
			}
			if !errors.Is(commitErrs[i], worker.ErrLost) {
				t.Errorf("commit after the loss = %v, want ErrLost", commitErrs[i])
			}
		}
		for _, id := range []shard.ID{"stream/shard-000", "stream/shard-001"} {
			if cp, err := f.store.Load(context.Background(), id); err != nil || cp.Offset == 999 {
				t.Errorf("%s: %+v (err %v): the refused commit reached the store", id, cp, err)
			}
		}
	})
}

// TestDrainTimeoutKeepsTheLockUntilTheHandlerReturns: a revoked handler
// that overruns the drain timeout loses its claim then (Lost closes, its
// commits are refused), and the lock stays held until it returns, so the
// next owner never starts beside it. It fails if the lock is released at
// the drain timeout while the handler still runs.
func TestDrainTimeoutKeepsTheLockUntilTheHandlerReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 2)
		const drain, overrun = 3 * time.Second, 8 * time.Second
		var mu sync.Mutex
		var lostAfter []time.Duration
		var overran atomic.Bool
		stubborn := worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			f.events.add(event{worker: "a", shard: c.Shard, token: c.Token, start: true})
			<-ctx.Done()
			if overran.Swap(true) {
				f.events.add(event{worker: "a", shard: c.Shard, token: c.Token, cause: context.Cause(ctx)})
				return nil // only the first hand-off overruns
			}
			revoked := time.Now()
			go func() {
				<-c.Lost()
				mu.Lock()
				lostAfter = append(lostAfter, time.Since(revoked))
				mu.Unlock()
			}()
			time.Sleep(overrun) // ignores both signals for a while
			f.events.add(event{worker: "a", shard: c.Shard, token: c.Token, cause: context.Cause(ctx)})
			return nil
		})
		cfg := f.config("a", stubborn)
		cfg.DrainTimeout = drain
		f.startWith(cfg)
		settle(5 * time.Second)
		f.start("b", nil)
		settle(30 * time.Second)
		if c := counts(f.owners()); c["a"] != 1 || c["b"] != 1 {
			t.Fatalf("after b joined: %v, want one each", c)
		}
		for _, o := range overlaps(f.events.list()) {
			t.Errorf("two workers ran one shard: %s", o)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(lostAfter) != 1 || lostAfter[0] != drain {
			t.Errorf("the overrunning handler saw Lost after %v, want exactly the drain timeout %v", lostAfter, drain)
		}
	})
}

// TestMemberKeyDeletedOrOverwrittenRejoins: an operator deletes a live
// worker's member key, or overwrites it with a plain PUT (which keeps the
// session). The worker writes its registration back within one watch round
// and keeps its share. It fails if the worker drops out of the plan for
// good, staying active and owning nothing until restarted.
func TestMemberKeyDeletedOrOverwrittenRejoins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(c interface {
			DeleteMember(string) bool
			PutMember(shard.Member)
		})
	}{
		{"deleted", func(c interface {
			DeleteMember(string) bool
			PutMember(shard.Member)
		}) {
			c.DeleteMember("a")
		}},
		{"overwritten", func(c interface {
			DeleteMember(string) bool
			PutMember(shard.Member)
		}) {
			c.PutMember(shard.Member{ID: "a", Weight: 0, Version: "hand-edited"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t, 8)
				a := f.start("a", nil)
				f.start("b", nil)
				settle(20 * time.Second)
				before, _ := f.snapshot().Member("a")
				tc.tamper(f.coord)
				settle(100 * time.Millisecond)
				m, ok := f.snapshot().Member("a")
				if !ok || m.Session != a.w.Status().Session || m.Weight != 1 || !m.Started.Equal(before.Started) {
					t.Fatalf("100ms after the key was %s: %+v (present %v), want a's registration back under its session %s",
						tc.name, m, ok, a.w.Status().Session)
				}
				settle(20 * time.Second)
				if c := counts(f.owners()); c["a"] != 4 || c["b"] != 4 {
					t.Fatalf("after the key was %s: %v, want 4 each", tc.name, c)
				}
			})
		})
	}
}

// partialAcquire grants the first half of every multi-shard Acquire and
// then fails, as a multi-transaction Acquire does when a later transaction
// fails.
type partialAcquire struct {
	shard.Coordinator
}

func (p partialAcquire) Locks() shard.Locks { return partialLocks{p.Coordinator.Locks()} }

type partialLocks struct{ shard.Locks }

func (p partialLocks) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Grant, error) {
	if len(want) < 2 {
		return p.Locks.Acquire(ctx, id, want)
	}
	got, err := p.Locks.Acquire(ctx, id, want[:len(want)/2])
	if err != nil {
		return got, err
	}
	return got, fmt.Errorf("%w: the second transaction failed", shard.ErrUnavailable)
}

// TestPartialAcquireKeepsWhatWasGranted: the claims an Acquire granted
// before it failed run at once, under the reason they were acquired for.
// It fails if they are dropped and come back one snapshot later as
// "adopted".
func TestPartialAcquireKeepsWhatWasGranted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		cfg := f.config("a", nil)
		cfg.Handler = f.events.waiting("a")
		cfg.Coordinator = nil
		reg := newRegistry()
		cfg.Registerer = reg
		w, err := worker.New(func() worker.Config { c := cfg; c.Coordinator = partialAcquire{f.coord}; return c }())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		settle(10 * time.Second)
		if c := counts(f.owners()); c["a"] != 8 {
			t.Fatalf("a owns %v, want all 8", c)
		}
		if n := counterValue(t, reg, "shardlease_acquisitions_total", "adopted"); n != 0 {
			t.Errorf("%v acquisitions were re-adopted from a later snapshot: a partial Acquire's claims were dropped", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

// counterValue reads the counter name{reason=label} from reg (0 when absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	return counterWith(t, reg, name, "reason", label)
}

// counterWith reads the counter name{key=value} from reg (0 when absent).
func counterWith(t *testing.T, reg *prometheus.Registry, name, key, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == key && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// blockingCommits is an offsets store whose commits wait until their
// context ends: a commit in flight when the claim's authority ends.
type blockingCommits struct{ offsets.Store }

func (b blockingCommits) Commit(ctx context.Context, _ shard.ID, _ shard.Token, _ int64) error {
	<-ctx.Done()
	return fmt.Errorf("blocked commit: %w", ctx.Err())
}

// TestCommitInFlightWhenAuthorityEndsSaysLost: a commit still in flight at
// the local deadline is cancelled, and the handler is told why — ErrLost —
// not only that a context was cancelled.
func TestCommitInFlightWhenAuthorityEndsSaysLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 1)
		errs := make(chan error, 1)
		h := worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			errs <- c.Commit(context.Background(), 1)
			<-ctx.Done()
			return nil
		})
		cfg := f.config("a", h)
		cfg.Offsets = blockingCommits{f.store}
		a := f.startWith(cfg)
		settle(time.Second)
		a.faults.Set(faults.Hang)
		settle(testPolicy.TTL)
		select {
		case err := <-errs:
			if !errors.Is(err, worker.ErrLost) || !errors.Is(err, context.Canceled) {
				t.Fatalf("commit in flight at the deadline = %v, want ErrLost (and the cancellation)", err)
			}
		default:
			t.Fatal("the commit in flight did not return at the deadline")
		}
		a.faults.Set(faults.Healthy)
	})
}
