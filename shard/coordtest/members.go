package coordtest

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// watchMember: WatchMember(0) returns the key at once; a later call blocks
// until that key changes, and is woken by each way it can change under a
// live worker: its own session rewrites it, an operator's plain put (new
// value, same session), the session's end (the key stays, without a
// session), a delete (the key is missing). Writes to other keys — shards,
// other members — never wake it. This is how a worker learns that someone
// else ended its session or removed its registration.
func (s *suite) watchMember(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)
	join(t, c, a, shard.Member{ID: "w-a", Weight: 1})

	start := time.Now()
	k, err := c.WatchMember(ctx, "w-a", 0)
	if err != nil {
		t.Fatalf("WatchMember(w-a, 0): %v", err)
	}
	if d := time.Since(start); d > s.o.timing.Slack {
		t.Fatalf("WatchMember(w-a, 0) took %v, want at once", d)
	}
	if k.Index == 0 || !k.Exists || k.Problem != "" || k.Member.ID != "w-a" || k.Member.Weight != 1 || k.Member.Session != a {
		t.Fatalf("WatchMember(w-a, 0) = %+v, want w-a with weight 1 held by %s at a non-zero index", k, a)
	}
	if m, err := c.WatchMember(ctx, "nobody", 0); err != nil || m.Exists || m.Index == 0 {
		t.Fatalf("WatchMember(nobody, 0) = %+v, %v; want a missing key at a non-zero index", m, err)
	}

	// Whoever writes, the watch of a key wakes for it and only for it.
	// Each step's noise writes to other keys while the watch is blocked.
	noise := func() {
		acquire(t, c, b, "s-000")
		release(t, c, b, "noise", "s-000")
		join(t, c, b, shard.Member{ID: "w-b", Weight: k.Member.Weight})
	}
	k = s.memberWakes(t, c, "w-a", k.Index, "its session's update", noise, func() {
		join(t, c, a, shard.Member{ID: "w-a", Weight: 2})
	})
	if !k.Exists || k.Member.Weight != 2 || k.Member.Session != a {
		t.Fatalf("after the holder's update: %+v, want weight 2 held by %s", k, a)
	}
	k = s.memberWakes(t, c, "w-a", k.Index, "an operator's put", noise, func() {
		s.o.operator.PutMember(t, c, shard.Member{ID: "w-a", Weight: 3, Draining: true})
	})
	if !k.Exists || k.Member.Weight != 3 || !k.Member.Draining || k.Member.Session != a {
		t.Fatalf("after an operator's put: %+v, want the new value (weight 3, draining), still held by %s", k, a)
	}
	k = s.memberWakes(t, c, "w-a", k.Index, "the session's end", noise, func() { destroy(t, c, a) })
	if !k.Exists || k.Member.Session != "" || k.Member.Weight != 3 {
		t.Fatalf("after DestroySession: %+v, want the key kept (weight 3) without a session", k)
	}
	k = s.memberWakes(t, c, "w-a", k.Index, "a delete", noise, func() { s.o.operator.DeleteMember(t, c, "w-a") })
	if k.Exists {
		t.Fatalf("after a delete: %+v, want a missing key", k)
	}
}

// memberWakes starts WatchMember(id, after), makes the noise writes and
// checks that the watch is still blocked a while later, then makes the
// write and returns what the watch returned for it. The watch runs on its
// own goroutine so that the writes, which may fail the test, run on the
// test's; a watch left blocked ends with the test's context.
func (s *suite) memberWakes(t *testing.T, c shard.Coordinator, id string, after uint64, what string, noise, write func()) shard.MemberKey {
	t.Helper()
	type result struct {
		key shard.MemberKey
		err error
	}
	woke := make(chan result, 1)
	go func() {
		k, err := c.WatchMember(t.Context(), id, after)
		woke <- result{k, err}
	}()
	noise()
	select {
	case r := <-woke:
		t.Fatalf("WatchMember(%s, %d) returned before %s, after writes to other keys only: %+v, %v", id, after, what, r.key, r.err)
	case <-time.After(quiet):
	}
	write()
	select {
	case r := <-woke:
		if r.err != nil {
			t.Fatalf("WatchMember(%s, %d) woken by %s: %v", id, after, what, r.err)
		}
		if r.key.Index <= after || shard.NextIndex(after, r.key.Index) != r.key.Index {
			t.Fatalf("WatchMember(%s, %d) woken by %s returned index %d, want a higher one", id, after, what, r.key.Index)
		}
		return r.key
	case <-time.After(s.o.timing.Slack):
		t.Fatalf("WatchMember(%s, %d) still blocked %v after %s", id, after, s.o.timing.Slack, what)
	}
	return shard.MemberKey{}
}

// quiet is how long a watch must stay blocked to count as not woken.
const quiet = 300 * time.Millisecond
