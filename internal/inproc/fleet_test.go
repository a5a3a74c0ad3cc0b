package inproc

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/faults"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var policy = shard.LeasePolicy{TTL: 2 * time.Second, RenewEvery: 400 * time.Millisecond, PauseBudget: time.Second, LockDelay: time.Second}

// idle holds its shard until told to stop.
var idle = worker.HandlerFunc(func(ctx context.Context, _ *worker.Claim) error {
	<-ctx.Done()
	return nil
})

// frozen reports whether m is frozen: a wait that cannot last returns false.
func frozen[E any](m *Member[E]) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return !m.WaitThawed(ctx)
}

// TestHoldsOverlapAndHealOnlyThemselves: the calls hang while any fault
// hangs them, fail while any other fails them, the member stays frozen
// while any fault freezes it, and a heal ends its own fault only.
func TestHoldsOverlapAndHealOnlyThemselves(t *testing.T) {
	var f Fleet[struct{}]
	m := f.New("w1", memory.New())
	check := func(step string, mode faults.Mode, freeze bool) {
		t.Helper()
		if got := m.Coordinator().Mode(); got != mode {
			t.Errorf("%s: calls in mode %v, want %v", step, got, mode)
		}
		if got := frozen(m); got != freeze {
			t.Errorf("%s: frozen %v, want %v", step, got, freeze)
		}
	}
	check("no fault", faults.Healthy, false)
	m.Hold("pause", Hold{Mode: faults.Hang, Freeze: true})
	for range 20 { // the holds are a map: whichever order they are read in
		m.Hold("cut", Hold{Mode: faults.Fail})
		check("pause and cut", faults.Hang, true)
	}
	m.Unhold("pause")
	check("the pause healed", faults.Fail, false)
	m.Unhold("never held")
	check("a heal of nothing", faults.Fail, false)
	m.Unhold("cut")
	check("both healed", faults.Healthy, false)
}

// TestCrashIsForGood: a crashed member fails every call and stays frozen
// whatever is held or healed after, its session keeps its shards until it
// expires, it leaves Running, and a restart under its ID is a new member.
func TestCrashIsForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		coord := memory.New()
		store := offmem.New()
		var f Fleet[int]
		start := func(id string) *Member[int] {
			m := f.New(id, coord)
			err := f.Start(m, worker.Config{Fleet: shard.Config{Shards: 8}, Coordinator: m.Coordinator(),
				Offsets: m.Wire(store), Handler: idle, Policy: policy, DrainTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		a, b := start("a"), start("b")
		time.Sleep(10 * time.Second)
		held := func(sid shard.SessionID) int {
			snap, err := coord.Fleet().Watch(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, st := range snap.Shards {
				if st.Held() && st.Session == sid {
					n++
				}
			}
			return n
		}
		sa, sb := a.Worker().Status().Session, b.Worker().Status().Session
		before := held(sa)
		if before == 0 || held(sb) == 0 {
			t.Fatalf("not settled: a holds %d, b %d", before, held(sb))
		}

		a.Crash()
		a.Hold("pause", Hold{Mode: faults.Hang})
		a.Unhold("pause")
		if a.Coordinator().Mode() != faults.Fail || !frozen(a) || a.Killed().Err() == nil || !a.Crashed() {
			t.Errorf("crashed, then healed: mode %v, frozen %v, killed %v", a.Coordinator().Mode(), frozen(a), a.Killed().Err())
		}
		time.Sleep(policy.TTL / 2)
		if n := held(sa); n != before {
			t.Errorf("a crashed member's session holds %d shards before its TTL, want the %d it had: a crash releases nothing", n, before)
		}
		if got := f.Running(); !slices.Equal(got, []*Member[int]{b}) {
			t.Errorf("running %v after a's crash, want only b", ids(got))
		}

		a2 := start("a")
		if f.Member("a") != a2 || a2.N != 3 || len(f.All()) != 3 {
			t.Errorf("restart: Member(a) is member %d, N %d, %d members in all; want the new one, 3, 3", f.Member("a").N, a2.N, len(f.All()))
		}
		if got := f.Running(); !slices.Equal(got, []*Member[int]{b, a2}) {
			t.Errorf("running %v after a's restart, want b and the new a", ids(got))
		}
		if err := f.Start(b, worker.Config{}); !errors.Is(err, ErrStarted) {
			t.Errorf("starting b again: %v, want ErrStarted", err)
		}
		time.Sleep(5 * time.Second) // the new a joins
		b.Leave()
		if !b.Left() || slices.Contains(f.Running(), b) {
			t.Errorf("b left but is still running")
		}
		f.StopAll()
		for _, m := range f.All() {
			if err := m.Err(); err != nil {
				t.Errorf("member %d (%s): Run returned %v", m.N, m.ID, err)
			}
		}
	})
}

// TestWireFreezesCommitsInFlight: a frozen member's commit reaches the
// store only when it thaws, even if its context ends meanwhile; one frozen
// when its member crashes never arrives.
func TestWireFreezesCommitsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f Fleet[struct{}]
		m := f.New("w1", memory.New())
		store := offmem.New()
		wire := m.Wire(store)
		ctx := context.Background()
		committed := func() int64 {
			cp, err := store.Load(ctx, s1)
			if err != nil {
				t.Fatal(err)
			}
			return cp.Offset
		}

		m.Hold("pause", Hold{Mode: faults.Hang, Freeze: true})
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- wire.Commit(cctx, s1, 1, 5) }()
		synctest.Wait()
		cancel()
		synctest.Wait()
		if got := committed(); got != 0 {
			t.Fatalf("a frozen member's commit reached the store (offset %d)", got)
		}
		m.Unhold("pause")
		if err := <-done; err != nil || committed() != 5 {
			t.Fatalf("after the thaw: %v, offset %d; want the late commit accepted", err, committed())
		}

		m.Hold("pause", Hold{Mode: faults.Hang, Freeze: true})
		go func() { done <- wire.Commit(ctx, s1, 1, 9) }()
		synctest.Wait()
		m.Crash()
		m.gate.Open() // as StopAll does, to let frozen goroutines wind down
		if err := <-done; !errors.Is(err, ErrCrashed) || committed() != 5 {
			t.Errorf("crashed with a commit in flight: %v, offset %d; want ErrCrashed and 5", err, committed())
		}
	})
}

func ids[E any](ms []*Member[E]) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}
