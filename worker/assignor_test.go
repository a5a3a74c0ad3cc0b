package worker_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/shard"
)

// assignorOf returns the fleet's assignor key.
func (f *fleet) assignorOf() shard.LockKey { return f.snapshot().Assignor }

// TestOneAssignorAndItsCrash: a fleet has exactly one assignor, which
// holds P/assignor with its own worker's session. When that worker
// crashes, another takes the role with a higher epoch after the lock-delay,
// rebuilds from the coordinator alone, and the crashed worker's shards are
// owned again, balanced, with no two handlers of a shard at once.
func TestOneAssignorAndItsCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 16)
		ids := []string{"a", "b", "c", "d"}
		for _, id := range ids {
			f.start(id, nil)
		}
		settle(10 * time.Second)
		old := f.assignorOf()
		if !old.Held() {
			t.Fatal("no assignor after 10 s")
		}
		leaders := 0
		for _, id := range ids {
			if f.running[id].w.Status().AssignorEpoch != 0 {
				leaders++
			}
		}
		if leaders != 1 {
			t.Fatalf("%d workers say they are the assignor, want 1", leaders)
		}
		if c := counts(f.owners()); len(c) != 4 || spread(c) > 0 {
			t.Fatalf("before the crash: %v, want 4 each", c)
		}

		crashed := f.running[old.Worker]
		crashed.faults.Set(faults.Fail)
		settle(testPolicy.TTL + testPolicy.LockDelay + 10*time.Second)
		now := f.assignorOf()
		if !now.Held() || now.Worker == old.Worker || now.Token <= old.Token {
			t.Fatalf("after the assignor's worker crashed: assignor %+v, want another worker with an epoch above %d", now, old.Token)
		}
		c := counts(f.owners())
		if c[old.Worker] != 0 || len(c) != 3 || spread(c) > 1 || c[ids[0]]+c[ids[1]]+c[ids[2]]+c[ids[3]] != 16 {
			t.Fatalf("after the crash: %v, want 16 shards over the 3 others, within one", c)
		}
		for _, o := range overlaps(f.events.list()) {
			t.Errorf("two workers ran one shard: %s", o)
		}
		crashed.faults.Set(faults.Healthy)
	})
}

// neverAcquires makes a live worker's coordinator take no shard it is
// given: its Acquire grants nothing.
func neverAcquires(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op == shard.OpAcquire && !slices.Contains(call.Locks, shard.AssignorLock) {
		return nil
	}
	return invoke(ctx)
}

// TestStuckWorkerDoesNotFlap: 12 workers over 128 shards for 3 minutes, one
// of them live but never acquiring. The assignor judges it stuck and gives
// its shards to the others once; nothing is handed to it again under that
// session. Unowned shard-time stays at most 1 % and no shard changes owner
// twice. It fails if a stuck worker is handed shards again and again
// (docs/benchmarks.md, "Ownership: what the numbers say").
func TestStuckWorkerDoesNotFlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const shards, span = 128, 3 * time.Minute
		f := newFleet(t, shards)
		for i := range 11 {
			f.start(string(rune('a'+i)), nil)
		}
		f.startWrapped(f.config("stuck", f.events.waiting("stuck")), func(c shard.Coordinator) shard.Coordinator { return shard.Intercept(c, neverAcquires) })

		var unowned time.Duration
		const every = 100 * time.Millisecond
		for elapsed := time.Duration(0); elapsed < span; elapsed += every {
			settle(every)
			unowned += time.Duration(shards-len(f.owners())) * every
		}
		frac := float64(unowned) / float64(shards*span)
		t.Logf("unowned shard-time %.3f %% over %v", 100*frac, span)
		if frac > 0.01 {
			t.Errorf("unowned shard-time %.2f %% over %v, want ≤ 1 %%", 100*frac, span)
		}
		starts := map[shard.ID][]string{}
		for _, e := range f.events.list() {
			if e.start {
				starts[e.shard] = append(starts[e.shard], e.worker)
			}
		}
		for id, ws := range starts {
			if len(ws) > 2 {
				t.Errorf("%s changed owner %d times (%v), want at most once", id, len(ws)-1, ws)
			}
		}
		if c := counts(f.owners()); c["stuck"] != 0 || len(f.owners()) != shards || spread(withoutKey(c, "stuck")) > 1 {
			t.Errorf("after %v: %v, want every shard owned by the 11 others, within one", span, c)
		}
		a := f.snapshot().Assignments["stuck"]
		if !a.Stuck || len(a.Shards) != 0 {
			t.Errorf("the stuck worker's assignment %+v, want it marked stuck with nothing assigned", a)
		}
	})
}

func withoutKey(c map[string]int, k string) map[string]int {
	out := map[string]int{}
	for w, n := range c {
		if w != k {
			out[w] = n
		}
	}
	return out
}

// TestPausedAssignorCannotWrite: the assignor's worker freezes (its calls
// hang) past its TTL; another worker takes the role; when the old one
// wakes, whatever it writes under its old epoch is refused by the
// coordinator, and at no sampled moment is a shard in two workers'
// assignments or run by two workers.
func TestPausedAssignorCannotWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 24)
		for _, id := range []string{"a", "b", "c"} {
			f.start(id, nil)
		}
		settle(10 * time.Second)
		old := f.assignorOf()
		paused := f.running[old.Worker]
		paused.faults.Set(faults.Hang)
		check := func(when string) {
			t.Helper()
			seen := map[shard.ID]string{}
			for w, a := range f.snapshot().Assignments {
				for _, id := range a.Shards {
					if o, dup := seen[id]; dup {
						t.Fatalf("%s: %s is in the assignments of %s and %s", when, id, o, w)
					}
					seen[id] = w
				}
			}
		}
		for range 30 {
			settle(time.Second)
			check("while the old assignor is frozen")
		}
		now := f.assignorOf()
		if now.Worker == old.Worker || now.Token <= old.Token {
			t.Fatalf("the assignor is still %+v after its worker froze for 30 s", now)
		}
		paused.faults.Set(faults.Healthy) // it wakes and acts on its old epoch
		for range 20 {
			settle(500 * time.Millisecond)
			check("after the old assignor woke")
		}
		for _, o := range overlaps(f.events.list()) {
			t.Errorf("two workers ran one shard: %s", o)
		}
		if c := counts(f.owners()); len(f.owners()) != 24 || spread(c) > 1 {
			t.Errorf("at the end: %v, want all 24 owned within one", c)
		}
	})
}

// TestLockDeletedUnderItsRunner: an operator deletes a held shard's lock
// key by hand. The worker reads only its assignment key; the assignor sees
// the shard free after the claim (Free, at an index past the token), so
// the runner is lost — never two handlers at once — and the shard is taken
// again with a higher token.
func TestLockDeletedUnderItsRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 4)
		f.start("a", nil)
		f.start("b", nil)
		settle(10 * time.Second)
		var victim shard.ID
		var before shard.Token
		for _, st := range f.snapshot().Shards {
			if st.Held() {
				victim, before = st.Shard, st.Token
				break
			}
		}
		if !f.coord.DeleteShard(victim) {
			t.Fatalf("no key for %s", victim)
		}
		settle(5 * time.Second)
		st, ok := f.snapshot().Shard(victim)
		if !ok || !st.Held() || st.Token <= before {
			t.Fatalf("after its lock was deleted, %s is %+v, want held again with a token above %d", victim, st, before)
		}
		lost := false
		for _, e := range f.events.list() {
			lost = lost || (e.shard == victim && e.token == before && !e.start && isLost(e.cause))
		}
		if !lost {
			t.Errorf("the runner of %s under token %d did not end with ErrLost", victim, before)
		}
		for _, o := range overlaps(f.events.list()) {
			t.Errorf("two workers ran one shard: %s", o)
		}
	})
}
