package worker_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/assignor"
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
// its shards to the others once; after that it is handed one shard per
// probation only, at doubling intervals (verdicts of 2, 4, 8… StuckAfter).
// After the first verdict only a probation's shard goes unowned, for at
// most StuckAfter and a hand-off, and changes owner. It fails if a stuck worker is handed shards
// again and again (docs/benchmarks.md, "Ownership: what the numbers say").
func TestStuckWorkerDoesNotFlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const shards, span = 128, 3 * time.Minute
		f := newFleet(t, shards)
		for i := range 11 {
			f.start(string(rune('a'+i)), nil)
		}
		f.startWrapped(f.config("stuck", f.events.waiting("stuck")), func(c shard.Coordinator) shard.Coordinator { return shard.Intercept(c, neverAcquires) })

		// Unowned shard-time over the span, and after the first verdict
		// once every shard was owned again: then only a probation's shard
		// may go unowned, for StuckAfter and a hand-off at most.
		var unowned, later time.Duration
		judged, rest := false, false
		const every = 100 * time.Millisecond
		for elapsed := time.Duration(0); elapsed < span; elapsed += every {
			settle(every)
			s := f.snapshot()
			free := time.Duration(shards-len(s.Owners())) * every
			unowned += free
			if !judged {
				m, _ := assignor.Remembered(s.Assignments["stuck"])
				judged = m.Stuck
			}
			rest = rest || (judged && free == 0)
			if rest {
				later += free
			}
		}
		frac := float64(unowned) / float64(shards*span)
		stuckAfter := f.config("stuck", nil).EffectiveStuckAfter()
		t.Logf("unowned shard-time %.3f %% over %v, %v after the first verdict (StuckAfter %v)", 100*frac, span, later, stuckAfter)
		if frac > 0.015 {
			t.Errorf("unowned shard-time %.2f %% over %v, want ≤ 1.5 %%", 100*frac, span)
		}
		a := f.snapshot().Assignments["stuck"]
		mem, _ := assignor.Remembered(a)
		if probations := mem.Verdicts - 1; later > time.Duration(probations)*(stuckAfter+2*time.Second) {
			t.Errorf("%v of unowned shard-time after the first verdict, want at most StuckAfter + 2 s for each of %d probations", later, probations)
		}
		// StuckAfter is 19 s here: verdicts at about 19 s, 76 s and 171 s
		// (each after a probation of one shard not taken), the next
		// probation due after the span.
		if !mem.Stuck || mem.Verdicts != 3 || len(a.Shards) != 0 {
			t.Errorf("the stuck worker's assignment %+v, memory %+v: want its third verdict lasting, nothing assigned", a, mem)
		}
		starts := map[shard.ID][]string{}
		for _, e := range f.events.list() {
			if e.start {
				starts[e.shard] = append(starts[e.shard], e.worker)
			}
		}
		changes := 0
		for _, ws := range starts {
			changes += len(ws) - 1
		}
		if probations := mem.Verdicts - 1; changes > probations {
			t.Errorf("%d changes of owner, want at most one per probation (%d)", changes, probations)
		}
		if c := counts(f.owners()); c["stuck"] != 0 || len(f.owners()) != shards || spread(withoutKey(c, "stuck")) > 1 {
			t.Errorf("after %v: %v, want every shard owned by the 11 others, within one", span, c)
		}
	})
}

// TestStuckVerdictExpiresOnProgress: a worker that takes nothing for a
// while (its acquisitions are refused, as a worker whose view of its key
// lags long enough would be) is judged stuck; once it can take shards
// again, the verdict ends 2·StuckAfter after it was given, the worker takes
// the one shard of its probation, and the fleet is balanced again with it:
// the verdict does not last for the session.
func TestStuckVerdictExpiresOnProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const shards = 60
		f := newFleet(t, shards)
		for _, id := range []string{"a", "b"} {
			f.start(id, nil)
		}
		settle(10 * time.Second)
		var blocked atomic.Bool
		blocked.Store(true)
		refuse := func(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
			if blocked.Load() {
				return neverAcquires(ctx, call, invoke)
			}
			return invoke(ctx)
		}
		f.startWrapped(f.config("c", f.events.waiting("c")), func(c shard.Coordinator) shard.Coordinator { return shard.Intercept(c, refuse) })
		stuckAfter := f.config("c", nil).EffectiveStuckAfter()
		var mem assignor.Memory
		for waited := time.Duration(0); !mem.Stuck; waited += time.Second {
			if waited > 2*stuckAfter {
				t.Fatalf("c not judged stuck %v after it joined: %+v", waited, mem)
			}
			settle(time.Second)
			mem, _ = assignor.Remembered(f.snapshot().Assignments["c"])
		}
		verdict := time.Now()
		blocked.Store(false) // it could take shards now; it is given none

		settle(2*stuckAfter - 2*time.Second)
		if c := counts(f.owners()); c["c"] != 0 {
			t.Fatalf("c runs %d shards during its verdict", c["c"])
		}
		settle(2*time.Second + 10*time.Second) // the verdict ends; a probation shard; then its share
		mem, _ = assignor.Remembered(f.snapshot().Assignments["c"])
		c := counts(f.owners())
		t.Logf("%v after the verdict: %v, memory %+v", time.Since(verdict), c, mem)
		if mem.Stuck || mem.Verdicts != 0 || len(f.owners()) != shards || c["c"] != shards/3 || spread(c) > 0 {
			t.Errorf("after the verdict ended: owners %v, c's memory %+v; want 20 each and the verdict gone", c, mem)
		}
		for _, o := range overlaps(f.events.list()) {
			t.Errorf("two workers ran one shard: %s", o)
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
