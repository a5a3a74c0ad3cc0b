package worker_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// TestRestartWithinRejoinGrace: a worker stopped with a rejoin grace and
// started again within it gets exactly the shards it had, and nobody else
// ran one of them meanwhile (its shards are idle, none moves). It fails if
// the assignor gives a returning worker's shards away, or if the member key
// or the assignment key of a stopped worker does not survive its session.
func TestRestartWithinRejoinGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 24)
		cfg := func(id string) {
			c := f.config(id, f.events.waiting(id))
			c.RejoinGrace = 30 * time.Second
			f.startWith(c)
		}
		for _, id := range []string{"a", "b", "c"} {
			cfg(id)
		}
		settle(10 * time.Second)
		before := f.owners()
		if c := counts(before); len(c) != 3 || spread(c) != 0 {
			t.Fatalf("before the restart: %v, want 8 each", c)
		}
		starts := len(startsOf(f.events.list()))

		if err := f.stop("b"); err != nil {
			t.Fatalf("stopping b: %v", err)
		}
		settle(5 * time.Second) // down: more than a lock-delay and a few assignor turns
		for s, w := range f.owners() {
			if before[s] == "b" {
				t.Fatalf("while b is down, its shard %s is owned by %s", s, w)
			}
		}
		snap := f.snapshot()
		m, ok := snap.Member("b")
		if !ok || m.Live() || !m.Returning(time.Now()) {
			t.Fatalf("while b is down its member key is %+v (present %v), want dead and returning", m, ok)
		}
		if got := len(snap.Assignments["b"].Shards); got != 8 {
			t.Fatalf("while b is down its assignment lists %d shards, want its 8", got)
		}

		cfg("b")
		settle(10 * time.Second)
		if after := f.owners(); !maps.Equal(before, after) {
			t.Fatalf("after b's return the owners differ:\nbefore %v\nafter  %v", before, after)
		}
		for _, e := range startsOf(f.events.list())[starts:] {
			if e.worker != "b" {
				t.Fatalf("a handler started on %s for %s during b's restart: a move", e.worker, e.shard)
			}
		}
		if m, _ := f.snapshot().Member("b"); !m.Live() || !m.RejoinUntil.IsZero() {
			t.Fatalf("b's member key after its return: %+v, want live without RejoinUntil", m)
		}
		for _, o := range overlaps(f.events.list()) {
			t.Errorf("two workers ran one shard: %s", o)
		}
	})
}

// TestRejoinGracePasses: a worker that does not come back within its grace
// loses its shards to the others once it ends.
func TestRejoinGracePasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 12)
		for _, id := range []string{"a", "b", "c"} {
			c := f.config(id, f.events.waiting(id))
			c.RejoinGrace = 4 * time.Second
			f.startWith(c)
		}
		settle(10 * time.Second)
		if err := f.stop("c"); err != nil {
			t.Fatalf("stopping c: %v", err)
		}
		settle(2 * time.Second)
		if c := counts(f.owners()); c["a"]+c["b"] != 8 {
			t.Fatalf("inside c's grace: %v, want a and b to keep their 8 and c's 4 idle", c)
		}
		settle(5 * time.Second)
		if c := counts(f.owners()); c["a"] != 6 || c["b"] != 6 {
			t.Fatalf("past c's grace: %v, want 6 each for a and b", c)
		}
	})
}

// TestCordonSurvivesRestart: an operator's cordon on a worker's member key
// stays when the worker stops and joins again under the same ID.
func TestCordonSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		f.start("a", nil)
		f.start("b", nil)
		settle(10 * time.Second)
		ms, _ := f.snapshot().Member("b")
		mark := &shard.Mark{By: "ops", At: time.Now(), Reason: "disk"}
		m := ms.Member
		m.Cordon = mark
		if err := f.coord.Members().Join(context.Background(), ms.Session, m); err != nil {
			t.Fatalf("cordoning b: %v", err)
		}
		settle(2 * time.Second)
		if err := f.stop("b"); err != nil {
			t.Fatalf("stopping b: %v", err)
		}
		// Down long enough for the assignor to give b's shards away, as a
		// restart without a grace is: started again at once, before the
		// assignor's next step, b would find its key still listing its
		// shards (free, nobody else's yet) and take them back.
		settle(2 * time.Second)
		f.start("b", nil)
		settle(10 * time.Second)
		got, _ := f.snapshot().Member("b")
		if !got.Live() || got.Cordon == nil || got.Cordon.By != "ops" {
			t.Fatalf("b after its restart: %+v, want live and still cordoned by ops", got)
		}
		if c := counts(f.owners()); c["a"] != 8 {
			t.Fatalf("cordoned b rejoined without a grace: %v, want all 8 on a (b gets nothing new)", c)
		}
	})
}

func startsOf(evs []event) []event {
	var out []event
	for _, e := range evs {
		if e.start {
			out = append(out, e)
		}
	}
	return out
}

// failFirstMarks fails the first n Joins that carry a RejoinUntil with
// shard.ErrUnavailable, as a coordinator under load or a short network
// fault would.
type failFirstMarks struct {
	mu sync.Mutex
	n  int
}

func (c *failFirstMarks) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op != shard.OpJoin {
		return invoke(ctx)
	}
	c.mu.Lock()
	fail := !call.Member.RejoinUntil.IsZero() && c.n > 0
	if fail {
		c.n--
	}
	c.mu.Unlock()
	if fail {
		return fmt.Errorf("%w: refused by the test", shard.ErrUnavailable)
	}
	return invoke(ctx)
}

// TestRejoinMarkRetried: when the write that says "I will be back" fails
// at a stop, the worker retries it while its handlers drain, before it
// releases anything, so its shards are still kept for it. Without the
// retry the release lands unmarked and the others take the shards (two
// moves each: away, and back at the return).
func TestRejoinMarkRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 12)
		for _, id := range []string{"a", "b"} {
			c := f.config(id, f.events.waiting(id))
			c.RejoinGrace = 30 * time.Second
			f.startWith(c)
		}
		c := f.config("c", f.events.waiting("c"))
		c.RejoinGrace = 30 * time.Second
		f.startWrapped(c, func(co shard.Coordinator) shard.Coordinator {
			return shard.Intercept(co, (&failFirstMarks{n: 3}).intercept)
		})
		settle(10 * time.Second)
		before := f.owners()
		if n := counts(before)["c"]; n != 4 {
			t.Fatalf("before the stop c owns %d, want 4", n)
		}
		if err := f.stop("c"); err != nil {
			t.Fatalf("stopping c: %v", err)
		}
		settle(5 * time.Second)
		for s, w := range f.owners() {
			if before[s] == "c" {
				t.Fatalf("c's shard %s went to %s while c is inside its grace", s, w)
			}
		}
		if m, _ := f.snapshot().Member("c"); !m.Returning(time.Now()) {
			t.Fatalf("c's member key after its stop: %+v, want returning", m)
		}
	})
}

// unlockedAfterMark plays Consul's Sessions.Destroy, which unlocks the
// member key before it destroys the session: once the worker has written
// its rejoin mark, its own member key reads as held by no session. It
// counts the Joins made after the mark.
type unlockedAfterMark struct {
	shard.Coordinator
	mu         sync.Mutex
	marked     bool
	faked      bool
	afterMark  int
	registered []shard.Member
}

func (c *unlockedAfterMark) wrap(co shard.Coordinator) shard.Coordinator {
	c.Coordinator = shard.Intercept(co, c.intercept)
	return c
}

func (c *unlockedAfterMark) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	err := invoke(ctx)
	if call.Op != shard.OpJoin {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marked {
		c.afterMark++
		c.registered = append(c.registered, *call.Member)
	}
	if err == nil && !call.Member.RejoinUntil.IsZero() {
		c.marked = true
	}
	return err
}

// Members is the member registry whose Watch shows the destroy's unlock.
func (c *unlockedAfterMark) Members() shard.Members {
	return unlockedMembers{c.Coordinator.Members(), c}
}

type unlockedMembers struct {
	shard.Members
	c *unlockedAfterMark
}

func (um unlockedMembers) Watch(ctx context.Context, id string, after uint64) (shard.MemberKey, error) {
	c := um.c
	k, err := um.Members.Watch(ctx, id, after)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marked && !c.faked && k.Exists {
		k.Member.Session = "" // once: as the destroy's unlock is seen once
		c.faked = true
	}
	return k, err
}

// TestRejoinMarkIsTheLastWrite: a stopping worker's rejoin mark is the
// last write of its member key. The worker's guard of its key, which
// registers again when the key is taken from it, is stopped before the
// mark: on Consul the session's destroy unlocks the key before it ends the
// session, and a guard still running saw the key unlocked, registered
// again without the mark and locked it once more, so the returning
// worker's shards were given away and its key sat in lock-delay (the
// rolling-restart benchmark's 21 moves in one trial of five).
func TestRejoinMarkIsTheLastWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		slow := worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			<-ctx.Done()
			time.Sleep(time.Second) // drains for a second: the guard has time to act
			return nil
		})
		a := f.config("a", f.events.waiting("a"))
		f.startWith(a)
		b := f.config("b", slow)
		b.RejoinGrace = 30 * time.Second
		wrapped := &unlockedAfterMark{}
		f.startWrapped(b, wrapped.wrap)
		settle(10 * time.Second)
		if err := f.stop("b"); err != nil {
			t.Fatalf("stopping b: %v", err)
		}
		wrapped.mu.Lock()
		defer wrapped.mu.Unlock()
		if !wrapped.marked || wrapped.afterMark > 0 {
			t.Fatalf("b wrote its member key %d times after its rejoin mark (marked %v): %+v", wrapped.afterMark, wrapped.marked, wrapped.registered)
		}
		if m, _ := f.snapshot().Member("b"); !m.Returning(time.Now()) {
			t.Fatalf("b's member key after its stop: %+v, want its rejoin mark", m)
		}
	})
}
