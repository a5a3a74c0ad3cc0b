package coordtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// destroyReleases: Sessions.Destroy frees every shard and member key of the
// session, keeps their values, and leaves other sessions alone.
func (s *suite) destroyReleases(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)
	acquire(t, c, a, "s-000", "s-001")
	acquire(t, c, b, "s-002")
	join(t, c, a, shard.Member{ID: "w-a", Weight: 3})
	before := snapshot(t, c)

	destroy(t, c, a)
	snap := snapshot(t, c)
	for _, id := range []shard.ID{"s-000", "s-001"} {
		st, ok := snap.Shard(id)
		old, _ := before.Shard(id)
		if !ok || st.Held() || st.Owner.Worker != "w-a" || st.Token <= old.Token {
			t.Errorf("%s after destroy = %+v, want free, value kept, token above %d", id, st, old.Token)
		}
	}
	if h := holder(t, c, "s-002"); h != b {
		t.Errorf("other session's shard: holder %q, want %q", h, b)
	}
	if m, ok := snap.Member("w-a"); !ok || m.Live() || m.Weight != 3 {
		t.Errorf("member after destroy = %+v (found %v), want dead with its value", m, ok)
	}
	// Destroying again, or a session never created, is not an error.
	for _, id := range []shard.SessionID{a, "nobody"} {
		if err := c.Sessions().Destroy(ctx, id); err != nil {
			t.Errorf("DestroySession(%s) = %v, want nil", id, err)
		}
	}
}

// expiryAndLockDelay: a session that is not renewed loses everything it
// holds, not before TTL and within TTL + ExpiryWithin; a renewed session
// survives past its TTL; the shards of the expired session stay locked out
// for its lock-delay, then can be taken with a higher token.
func (s *suite) expiryAndLockDelay(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	tm := s.o.timing

	keeper := session(t, c, "keeper", tm.TTL, 0)
	other := session(t, c, "other", long, 0)
	created := time.Now()
	doomed := session(t, c, "doomed", tm.TTL, tm.LockDelay)
	first := acquire(t, c, doomed, "s-000", "s-001")
	if len(first) != 2 {
		t.Fatalf("doomed got %v", first)
	}
	join(t, c, doomed, shard.Member{ID: "doomed", Weight: 1})
	doomedEpoch := campaignHeld(t, c, doomed, "doomed")
	acquire(t, c, keeper, "s-002")

	// Keep the keeper alive from its own goroutine; errors come back on a
	// channel (never t.Fatal from a goroutine).
	renewCtx, stopRenew := context.WithCancel(ctx)
	renewErr := make(chan error, 1)
	var renewing sync.WaitGroup
	renewing.Go(func() {
		tick := time.NewTicker(tm.TTL / 4)
		defer tick.Stop()
		for {
			select {
			case <-renewCtx.Done():
				renewErr <- nil
				return
			case <-tick.C:
				if err := c.Sessions().Renew(renewCtx, keeper); err != nil && renewCtx.Err() == nil {
					renewErr <- err
					return
				}
			}
		}
	})
	defer func() {
		stopRenew()
		renewing.Wait()
	}()

	within := tm.TTL + tm.ExpiryWithin + tm.Slack
	snap := waitFor(t, c, within, "the doomed session's shards and assignor lock to be released", func(sn shard.Snapshot) bool {
		for _, id := range []shard.ID{"s-000", "s-001"} {
			if st, ok := sn.Shard(id); !ok || st.Held() {
				return false
			}
		}
		return !sn.Assignor.Held()
	})
	seen := time.Now()
	if age := seen.Sub(created); age < tm.TTL {
		t.Fatalf("released after %v, before the TTL %v", age, tm.TTL)
	}
	for id, tok := range first {
		if st, _ := snap.Shard(id); st.Token <= tok || st.Owner.Worker != "doomed" {
			t.Errorf("%s after expiry = %+v, want value kept and token above %d", id, st, tok)
		}
	}
	if m, ok := snap.Member("doomed"); ok && m.Live() {
		t.Errorf("member of the expired session is still live: %+v", m)
	}
	if err := c.Sessions().Renew(ctx, doomed); !errors.Is(err, shard.ErrSessionInvalid) {
		t.Errorf("RenewSession after expiry = %v, want ErrSessionInvalid", err)
	}

	// Lock-delay: seen within moments of the invalidation, so still on,
	// for the shards and the assignor lock alike.
	if got := acquire(t, c, other, "s-000", "s-001"); len(got) != 0 {
		t.Fatalf("granted %v %v after the invalidation was seen, inside a lock-delay of %v", got, time.Since(seen), tm.LockDelay)
	}
	if e, held := campaign(t, c, other, "other"); held {
		t.Fatalf("assignor lock granted at epoch %d %v after the invalidation was seen, inside a lock-delay of %v", e, time.Since(seen), tm.LockDelay)
	}
	var (
		granted map[shard.ID]shard.Token
		epoch   shard.Token
	)
	deadline := seen.Add(tm.LockDelay + tm.Slack)
	for {
		granted = acquire(t, c, other, "s-000", "s-001")
		if epoch == 0 {
			epoch, _ = campaign(t, c, other, "other")
		}
		if len(granted) == 2 && epoch != 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(granted) != 2 || epoch == 0 {
		t.Fatalf("lock-delay %v not over %v after the invalidation was seen: granted %v, assignor epoch %d", tm.LockDelay, time.Since(seen), granted, epoch)
	}
	for id, tok := range granted {
		if tok <= first[id] {
			t.Errorf("%s token after lock-delay %d, want above %d", id, tok, first[id])
		}
	}
	if epoch <= doomedEpoch {
		t.Errorf("assignor epoch after lock-delay %d, want above the expired session's %d", epoch, doomedEpoch)
	}

	// The renewed keeper outlived its TTL.
	if age := time.Since(created); age <= tm.TTL {
		t.Fatalf("internal: the case ran %v, not past the TTL %v", age, tm.TTL)
	}
	if h := holder(t, c, "s-002"); h != keeper {
		t.Errorf("renewed session lost s-002 (holder %q) after %v", h, time.Since(created))
	}
	stopRenew()
	renewing.Wait()
	if err := <-renewErr; err != nil {
		t.Errorf("renewing the keeper: %v", err)
	}
}

// noLockDelayAfterRelease: Release frees shards for others at once,
// whatever the session's lock-delay; so does a Sessions.Destroy after the
// session released everything, which is how a worker stops on purpose.
func (s *suite) noLockDelayAfterRelease(t *testing.T) {
	c := s.open(t)
	a := session(t, c, "w-a", long, s.o.timing.LockDelay)
	b := session(t, c, "w-b", long, 0)
	first := acquire(t, c, a, "s-000", "s-001")
	join(t, c, a, shard.Member{ID: "w-a"})

	release(t, c, a, shard.ReasonDrain, "s-000")
	if got := acquire(t, c, b, "s-000"); got["s-000"] <= first["s-000"] {
		t.Fatalf("after release: b got %v, want s-000 at once with a token above %d", got, first["s-000"])
	}
	release(t, c, a, shard.ReasonShutdown, "s-001")
	destroy(t, c, a)
	if got := acquire(t, c, b, "s-001"); got["s-001"] <= first["s-001"] {
		t.Fatalf("after release and destroy: b got %v, want s-001 at once with a token above %d", got, first["s-001"])
	}
}

// destroyAppliesLockDelay: Sessions.Destroy is an invalidation, as in Consul.
// The shards the session still held stay closed to every other session for
// its lock-delay, then are granted with a higher token: whoever destroyed
// the session (an operator, a script) cannot know whether its worker is
// still acting on them, and the no-overlap rule of shard.LeasePolicy
// counts on the delay. Its member key is free at once, so that a worker
// restarting under its ID joins without waiting.
func (s *suite) destroyAppliesLockDelay(t *testing.T) {
	c := s.open(t)
	delay := s.o.timing.LockDelay
	a := session(t, c, "w-a", long, delay)
	b := session(t, c, "w-b", long, 0)
	first := acquire(t, c, a, "s-000", "s-001")
	join(t, c, a, shard.Member{ID: "w-a"})

	destroyed := time.Now() // at or before the coordinator's moment of the destroy
	destroy(t, c, a)
	if got := acquire(t, c, b, "s-000", "s-001"); len(got) != 0 {
		t.Fatalf("b got %v %v after the destroy began, inside its lock-delay of %v", got, time.Since(destroyed), delay)
	}
	join(t, c, b, shard.Member{ID: "w-a"})

	var granted map[shard.ID]shard.Token
	for deadline := destroyed.Add(delay + s.o.timing.Slack); ; {
		granted = acquire(t, c, b, "s-000", "s-001")
		if len(granted) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	after := time.Since(destroyed) // the grant came no later than this
	if len(granted) != 2 {
		t.Fatalf("lock-delay %v not over %v after the destroy: b got %v", delay, after, granted)
	}
	if after < delay {
		t.Fatalf("b got the shards %v after the destroy, before its lock-delay of %v ended", after, delay)
	}
	t.Logf("refused for the lock-delay of %v; granted %v after the destroy began", delay, after.Round(time.Millisecond))
	for id, tok := range granted {
		if tok <= first[id] {
			t.Errorf("%s token after the lock-delay %d, want above the destroyed session's %d", id, tok, first[id])
		}
	}
}

// goneSession: every call on a destroyed or never-created session says so.
func (s *suite) goneSession(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	configure(t, c, 4)
	gone := session(t, c, "w", long, 0)
	destroy(t, c, gone)
	for _, sid := range []shard.SessionID{gone, "nobody"} {
		calls := map[string]error{
			"RenewSession": c.Sessions().Renew(ctx, sid),
			"Join":         c.Members().Join(ctx, sid, shard.Member{ID: "w"}),
			"Release":      c.Locks().Release(ctx, sid, shard.ShardLocks([]shard.ID{"stream/shard-000"}), shard.ReasonRebalance),
		}
		claims, err := c.Locks().Acquire(ctx, sid, wantOf("stream/shard-000"))
		calls["Acquire"] = err
		if len(claims) != 0 {
			t.Errorf("Acquire(%s) granted %v", sid, claims)
		}
		grants, err := c.Locks().Acquire(ctx, sid, []shard.Acquisition{{Lock: shard.AssignorLock}})
		calls["Campaign"] = err
		if len(grants) != 0 {
			t.Errorf("Campaign(%s) = %v", sid, grants)
		}
		calls["Resign"] = c.Locks().Release(ctx, sid, []shard.Lock{shard.AssignorLock}, shard.ReasonShutdown)
		for name, err := range calls {
			if !errors.Is(err, shard.ErrSessionInvalid) {
				t.Errorf("%s(%s) = %v, want ErrSessionInvalid", name, sid, err)
			}
		}
		// A gone session holds nothing: it is not the assignor.
		err = c.Assignments().Assign(ctx, sid, 1, map[string]*shard.Assignment{"w": {}})
		if !errors.Is(err, shard.ErrNotAssignor) {
			t.Errorf("Assign(%s) = %v, want ErrNotAssignor", sid, err)
		}
	}
	if snap := snapshot(t, c); len(snap.Shards) != 0 || len(snap.Members) != 0 || snap.Assignor.Held() || len(snap.Assignments) != 0 {
		t.Fatalf("calls on gone sessions wrote: %s; assignor %+v, assignments %v", describe(snap), snap.Assignor, snap.Assignments)
	}
}

// argumentErrors: bad arguments are refused with ErrInvalidArgument (or
// ErrUnknownShard) naming what was wrong, and change nothing.
func (s *suite) argumentErrors(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	specs := []struct {
		spec shard.SessionSpec
		want []string
	}{
		{shard.SessionSpec{Worker: "w"}, []string{"ttl 0s"}},
		{shard.SessionSpec{Worker: "w", TTL: long, LockDelay: -time.Second}, []string{"lock-delay -1s"}},
		{shard.SessionSpec{TTL: -time.Second, LockDelay: -time.Second}, []string{"worker", "ttl -1s", "lock-delay -1s"}},
	}
	for _, tt := range specs {
		id, err := c.Sessions().Create(ctx, tt.spec)
		if !errors.Is(err, shard.ErrInvalidArgument) || id != "" {
			t.Errorf("CreateSession(%+v) = %q, %v; want ErrInvalidArgument", tt.spec, id, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
	}

	sid := session(t, c, "w", long, 0)
	for _, bad := range []shard.Lock{"", "config", "members", "a/b", "Assignor", shard.ShardLock("")} {
		grants, err := c.Locks().Acquire(ctx, sid, []shard.Acquisition{{Lock: bad}})
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) || len(grants) != 0 {
			t.Errorf("Acquire of lock %q = %v, %v; want ErrInvalidArgument naming it", bad, grants, err)
		}
	}
	epoch := campaignHeld(t, c, sid, "w")
	if err := c.Assignments().Assign(ctx, sid, epoch, map[string]*shard.Assignment{"w": {}}); !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), "config") {
		t.Errorf("Assign before the fleet is configured = %v, want ErrInvalidArgument saying so", err)
	}
	cfg := configure(t, c, 4)
	before := snapshot(t, c).Index
	cases := []struct {
		ids     []shard.ID
		wantErr error
		wantMsg string
	}{
		{[]shard.ID{cfg.IDs()[0], "stream/shard-004"}, shard.ErrUnknownShard, `"stream/shard-004"`},
		{[]shard.ID{cfg.IDs()[1], ""}, shard.ErrInvalidArgument, "empty"},
	}
	for _, tt := range cases {
		claims, err := c.Locks().Acquire(ctx, sid, wantOf(tt.ids...))
		if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) || len(claims) != 0 {
			t.Errorf("Acquire(%v) = %v, %v; want %v naming %s", tt.ids, claims, err, tt.wantErr, tt.wantMsg)
		}
	}
	if err := c.Members().Join(ctx, sid, shard.Member{}); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Errorf("Join with an empty id = %v, want ErrInvalidArgument", err)
	}
	// Assign refuses the whole call before writing anything.
	for _, tt := range []struct {
		set     map[string]*shard.Assignment
		wantErr error
		wantMsg string
	}{
		{map[string]*shard.Assignment{"a": {Shards: cfg.IDs()[:1]}, "": {}}, shard.ErrInvalidArgument, "empty"},
		{map[string]*shard.Assignment{"a": {Shards: cfg.IDs()[:1]}, "b": {Shards: []shard.ID{"stream/shard-004"}}}, shard.ErrUnknownShard, `"stream/shard-004"`},
	} {
		if err := c.Assignments().Assign(ctx, sid, epoch, tt.set); !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("Assign(%v) = %v, want %v naming %s", tt.set, err, tt.wantErr, tt.wantMsg)
		}
	}
	if _, err := c.Assignments().Watch(ctx, "", 0); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Errorf("WatchAssignment of an empty worker = %v, want ErrInvalidArgument", err)
	}
	noWrite(t, c, before, 300*time.Millisecond, "refused calls")
}

// canceledContext: every method returns the context's cause at once.
func (s *suite) canceledContext(t *testing.T) {
	c := s.open(t)
	sid := session(t, c, "w", long, 0)
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	calls := map[string]func() error{
		"Configure": func() error { _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 1}); return err },
		"CreateSession": func() error {
			_, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "w", TTL: long})
			return err
		},
		"RenewSession":   func() error { return c.Sessions().Renew(ctx, sid) },
		"DestroySession": func() error { return c.Sessions().Destroy(ctx, sid) },
		"Join":           func() error { return c.Members().Join(ctx, sid, shard.Member{ID: "w"}) },
		"Acquire":        func() error { _, err := c.Locks().Acquire(ctx, sid, wantOf("s")); return err },
		"Release": func() error {
			return c.Locks().Release(ctx, sid, shard.ShardLocks([]shard.ID{"s"}), shard.ReasonRebalance)
		},
		"Watch":       func() error { _, err := c.Fleet().Watch(ctx, 0); return err },
		"WatchMember": func() error { _, err := c.Members().Watch(ctx, "w", 0); return err },
		"Campaign": func() error {
			_, err := c.Locks().Acquire(ctx, sid, []shard.Acquisition{{Lock: shard.AssignorLock}})
			return err
		},
		"Resign": func() error {
			return c.Locks().Release(ctx, sid, []shard.Lock{shard.AssignorLock}, shard.ReasonShutdown)
		},
		"WatchAssignor": func() error { _, err := c.Locks().Watch(ctx, shard.AssignorLock, 0); return err },
		"Assign": func() error {
			return c.Assignments().Assign(ctx, sid, 1, map[string]*shard.Assignment{"w": {}})
		},
		"WatchAssignment": func() error { _, err := c.Assignments().Watch(ctx, "w", 0); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, cause) {
			t.Errorf("%s = %v, want the cause %v", name, err, cause)
		}
	}
	snap := snapshot(t, c)
	if snap.Config != nil || len(snap.Members) != 0 || len(snap.Shards) != 0 || snap.Assignor.Index != 0 || len(snap.Assignments) != 0 {
		t.Fatalf("canceled calls changed the fleet: %s; assignor %+v, assignments %v", describe(snap), snap.Assignor, snap.Assignments)
	}
	if err := c.Sessions().Renew(t.Context(), sid); err != nil {
		t.Fatalf("the session did not survive a canceled DestroySession: %v", err)
	}
}
