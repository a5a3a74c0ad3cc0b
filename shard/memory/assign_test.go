package memory_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

// TestAssignorLockDelay: the assignor lock of a session that expired is
// released by the expiry itself (a watcher of P/assignor is woken exactly
// at TTL, in the same write as the session's shards) and refused to every
// session until exactly LockDelay later.
func TestAssignorLockDelay(t *testing.T) {
	const (
		ttl   = 10 * time.Second
		delay = 3 * time.Second
	)
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		c := memory.New()
		start := time.Now()
		old := newSession(t, c, "old", ttl, delay)
		next := newSession(t, c, "next", time.Hour, 0)
		acquire(t, c, old, "s-000")
		first, held, err := shard.TryLock(ctx, c.Locks(), old, shard.AssignorLock)
		if err != nil || !held {
			t.Fatalf("Campaign = %d, %v, %v", first, held, err)
		}
		k, err := c.Locks().Watch(ctx, shard.AssignorLock, 0)
		if err != nil {
			t.Fatal(err)
		}
		k, err = c.Locks().Watch(ctx, shard.AssignorLock, k.Index) // nobody calls: only the expiry wakes it
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != ttl || k.Held() {
			t.Fatalf("WatchAssignor woke after %v with %+v, want free after exactly %v", got, k, ttl)
		}
		if st, _ := snapshot(t, c).Shard("s-000"); uint64(st.Token) != k.Index {
			t.Fatalf("the expiry released s-000 at %d and P/assignor at %d, want one write", st.Token, k.Index)
		}

		time.Sleep(delay - time.Nanosecond)
		if e, held, err := shard.TryLock(ctx, c.Locks(), next, shard.AssignorLock); held || err != nil {
			t.Fatalf("Campaign a nanosecond before the lock-delay ends = %d, %v, %v", e, held, err)
		}
		time.Sleep(time.Nanosecond)
		e, held, err := shard.TryLock(ctx, c.Locks(), next, shard.AssignorLock)
		if err != nil || !held || e <= first {
			t.Fatalf("Campaign as the lock-delay ends = %d, %v, %v; want held above %d", e, held, err, first)
		}
	})
}

// TestAssignWrites: Campaign, Resign and each transaction of an Assign that
// changes something is one write; campaigning for a lock held, resigning
// one not held and deleting missing keys write nothing; a watch on a
// missing assignment key is woken by nothing but that key.
func TestAssignWrites(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 200}); err != nil {
		t.Fatal(err)
	}
	a := newSession(t, c, "a", time.Hour, 0)
	b := newSession(t, c, "b", time.Hour, 0)
	idx := snapshot(t, c).Index
	step := func(what string, writes uint64, call func() error) {
		t.Helper()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		now := snapshot(t, c).Index
		if now-idx != writes {
			t.Fatalf("%s: %d writes, want %d", what, now-idx, writes)
		}
		idx = now
	}
	var epoch shard.Token
	step("a's campaign", 1, func() (err error) {
		epoch, _, err = shard.TryLock(ctx, c.Locks(), a, shard.AssignorLock)
		return err
	})
	step("b's campaign", 0, func() error {
		_, _, err := shard.TryLock(ctx, c.Locks(), b, shard.AssignorLock)
		return err
	})
	step("b's resign", 0, func() error { return c.Locks().Release(ctx, b, []shard.Lock{shard.AssignorLock}, shard.ReasonShutdown) })

	set := map[string]*shard.Assignment{}
	for i := range 2*memory.MaxTxnAssignments + 1 {
		set[string(rune('a'+i/26))+string(rune('a'+i%26))] = &shard.Assignment{Shards: []shard.ID{shard.Config{Shards: 200}.IDs()[i]}}
	}
	step("assigning three transactions' worth", 3, func() error { return c.Assignments().Assign(ctx, a, epoch, set) })
	step("deleting keys never written", 0, func() error {
		return c.Assignments().Assign(ctx, a, epoch, map[string]*shard.Assignment{"x1": nil, "x2": nil})
	})

	missing := make(chan error, 1)
	after := idx
	go func() {
		_, err := c.Assignments().Watch(ctx, "x1", after)
		missing <- err
	}()
	step("a write of another key", 1, func() error {
		return c.Assignments().Assign(ctx, a, epoch, map[string]*shard.Assignment{"aa": nil})
	})
	select {
	case err := <-missing:
		t.Fatalf("a watch on a missing key returned after another key's write: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	step("the key's write", 1, func() error {
		return c.Assignments().Assign(ctx, a, epoch, map[string]*shard.Assignment{"x1": {}})
	})
	if err := <-missing; err != nil {
		t.Fatal(err)
	}
	step("a's resign", 1, func() error { return c.Locks().Release(ctx, a, []shard.Lock{shard.AssignorLock}, shard.ReasonShutdown) })
}

// TestAssignmentCopies: what a snapshot or a watch returns is the caller's:
// changing it changes nothing in the coordinator.
func TestAssignmentCopies(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	ids, _ := c.Fleet().Configure(ctx, shard.Config{Shards: 4})
	a := newSession(t, c, "a", time.Hour, 0)
	epoch, _, _ := shard.TryLock(ctx, c.Locks(), a, shard.AssignorLock)
	if err := c.Assignments().Assign(ctx, a, epoch, map[string]*shard.Assignment{"w": {Shards: ids.IDs()[:2]}}); err != nil {
		t.Fatal(err)
	}
	snapshot(t, c).Assignments["w"].Shards[0] = "forged"
	k, err := c.Assignments().Watch(ctx, "w", 0)
	if err != nil || k.Assignment.Shards[0] != ids.IDs()[0] {
		t.Fatalf("WatchAssignment after a snapshot's copy was changed = %+v, %v", k, err)
	}
	k.Assignment.Shards[1] = "forged"
	if got := snapshot(t, c).Assignments["w"].Shards; got[1] != ids.IDs()[1] {
		t.Fatalf("snapshot after a watch's copy was changed = %v", got)
	}
}

// TestAssignmentWithoutConfig: a value put before the fleet has a config
// cannot be read, and says so; Assign is refused before anything is
// written.
func TestAssignmentWithoutConfig(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	a := newSession(t, c, "a", time.Hour, 0)
	epoch, _, _ := shard.TryLock(ctx, c.Locks(), a, shard.AssignorLock)
	if err := c.Assignments().Assign(ctx, a, epoch, map[string]*shard.Assignment{"w": {}}); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("Assign without a config = %v, want ErrInvalidArgument", err)
	}
	c.PutAssignmentValue("w", []byte(`{"epoch":1,"shards":""}`))
	if k, err := c.Assignments().Watch(ctx, "w", 0); err != nil || !k.Exists || k.Problem == "" {
		t.Fatalf("WatchAssignment of a value put without a config = %+v, %v; want a problem", k, err)
	}
	if snap := snapshot(t, c); len(snap.Problems) != 1 || len(snap.Assignments) != 0 {
		t.Fatalf("snapshot = problems %q, assignments %v; want one problem", snap.Problems, snap.Assignments)
	}
}
