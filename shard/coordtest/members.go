package coordtest

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// watchMember: Members.Watch(0) returns the key at once; a later call blocks
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
	k, err := c.Members().Watch(ctx, "w-a", 0)
	if err != nil {
		t.Fatalf("WatchMember(w-a, 0): %v", err)
	}
	if d := time.Since(start); d > s.o.timing.Slack {
		t.Fatalf("WatchMember(w-a, 0) took %v, want at once", d)
	}
	if k.Index == 0 || !k.Exists || k.Problem != "" || k.Member.ID != "w-a" || k.Member.Weight != 1 || k.Member.Session != a {
		t.Fatalf("WatchMember(w-a, 0) = %+v, want w-a with weight 1 held by %s at a non-zero index", k, a)
	}
	if m, err := c.Members().Watch(ctx, "nobody", 0); err != nil || m.Exists || m.Index == 0 {
		t.Fatalf("WatchMember(nobody, 0) = %+v, %v; want a missing key at a non-zero index", m, err)
	}

	// Whoever writes, the watch of a key wakes for it and only for it.
	// Each step's noise writes to other keys while the watch is blocked.
	noise := func() {
		acquire(t, c, b, "s-000")
		release(t, c, b, shard.ReasonRebalance, "s-000")
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

// memberWakes starts Members.Watch(id, after), makes the noise writes and
// checks that the watch is still blocked a while later, then makes the
// write and returns what the watch returned for it.
func (s *suite) memberWakes(t *testing.T, c shard.Coordinator, id string, after uint64, what string, noise, write func()) shard.MemberKey {
	t.Helper()
	return wakes(t, s.o.timing.Slack, fmt.Sprintf("WatchMember(%s, %d)", id, after), what, after,
		func(ctx context.Context) (shard.MemberKey, error) { return c.Members().Watch(ctx, id, after) },
		func(k shard.MemberKey) uint64 { return k.Index }, noise, write)
}

// wakes starts watch on its own goroutine, makes the noise writes and
// checks that the watch is still blocked a while later (quiet), then makes
// the write and returns what the watch returned for it, which must come
// within slack with an index above after. The writes, which may fail the
// test, run on the test's goroutine; a watch left blocked ends with the
// test's context. name is the watch call, for messages.
func wakes[K any](t *testing.T, slack time.Duration, name, what string, after uint64,
	watch func(context.Context) (K, error), index func(K) uint64, noise, write func()) K {
	t.Helper()
	type result struct {
		key K
		err error
	}
	woke := make(chan result, 1)
	go func() {
		k, err := watch(t.Context())
		woke <- result{k, err}
	}()
	noise()
	select {
	case r := <-woke:
		t.Fatalf("%s returned before %s, after writes to other keys only: %+v, %v", name, what, r.key, r.err)
	case <-time.After(quiet):
	}
	write()
	select {
	case r := <-woke:
		if r.err != nil {
			t.Fatalf("%s woken by %s: %v", name, what, r.err)
		}
		if i := index(r.key); i <= after || shard.NextIndex(after, i) != i {
			t.Fatalf("%s woken by %s returned index %d, want a higher one", name, what, i)
		}
		return r.key
	case <-time.After(slack):
		t.Fatalf("%s still blocked %v after %s", name, slack, what)
	}
	var zero K
	return zero
}

// quiet is how long a watch must stay blocked to count as not woken.
const quiet = 300 * time.Millisecond

// memberZone: a member's zone and labels are stored as written and shown
// in snapshots and to Members.Watch.
func (s *suite) memberZone(t *testing.T) {
	c := s.open(t)
	configure(t, c, 4)
	a := session(t, c, "w-a", long, 0)
	want := shard.Member{ID: "w-a", Weight: 1, Zone: "eu-west-1a", Labels: map[string]string{"disk": "ssd", "rack": "r7"}}
	join(t, c, a, want)
	ms, ok := snapshot(t, c).Member("w-a")
	if !ok || ms.Zone != want.Zone || !maps.Equal(ms.Labels, want.Labels) {
		t.Fatalf("snapshot member = %+v, want zone %q and labels %v", ms, want.Zone, want.Labels)
	}
	k, err := c.Members().Watch(t.Context(), "w-a", 0)
	if err != nil || k.Member.Zone != want.Zone || !maps.Equal(k.Member.Labels, want.Labels) {
		t.Fatalf("Members().Watch = %+v, %v; want zone %q and labels %v", k.Member, err, want.Zone, want.Labels)
	}
}
