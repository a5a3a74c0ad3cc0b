package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestCreateSessionInvalid(t *testing.T) {
	tests := []struct {
		name string
		spec shard.SessionSpec
		want []string // every problem is named
	}{
		{"zero ttl", shard.SessionSpec{Worker: "w"}, []string{"ttl 0s"}},
		{"negative ttl", shard.SessionSpec{Worker: "w", TTL: -time.Second}, []string{"ttl -1s"}},
		{"negative lock-delay", shard.SessionSpec{Worker: "w", TTL: time.Second, LockDelay: -2 * time.Second}, []string{"lock-delay -2s"}},
		{"empty worker", shard.SessionSpec{TTL: time.Second}, []string{"worker is empty"}},
		{"all at once", shard.SessionSpec{TTL: -time.Second, LockDelay: -time.Second}, []string{"worker", "ttl -1s", "lock-delay -1s"}},
	}
	c := memory.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := c.Sessions().Create(t.Context(), tt.spec)
			if !errors.Is(err, shard.ErrInvalidArgument) || id != "" {
				t.Fatalf("CreateSession = %q, %v; want ErrInvalidArgument", id, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	if s := c.LiveSessions(); len(s) != 0 {
		t.Fatalf("invalid specs created sessions %v", s)
	}
}

// TestSessionExpiry: a session that is not renewed loses everything it holds
// at exactly TTL, not a nanosecond earlier, and a watcher sees it happen
// though nobody else calls the coordinator.
func TestSessionExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		const ttl = 10 * time.Second
		c := memory.New()
		start := time.Now()
		sid := newSession(t, c, "w", ttl, 0)
		other := newSession(t, c, "other", time.Hour, 0)
		acquire(t, c, sid, "s-000", "s-001")
		acquire(t, c, other, "s-002")
		if err := c.Members().Join(ctx, sid, shard.Member{ID: "w", Weight: 1}); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, c)

		// Nobody calls the coordinator from here on; only the watcher waits.
		res := <-watchAsync(ctx, c, before.Index)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if got := res.at.Sub(start); got != ttl {
			t.Fatalf("watcher woke after %v, want exactly %v", got, ttl)
		}
		snap := res.snap
		if snap.Index != before.Index+1 {
			t.Fatalf("expiry took %d writes, want one", snap.Index-before.Index)
		}
		for _, id := range []shard.ID{"s-000", "s-001"} {
			st, ok := snap.Shard(id)
			if !ok || st.Held() || st.Token != shard.Token(snap.Index) || st.Owner.Worker != "w" {
				t.Errorf("%s after expiry = %+v, %v; want free, value kept, token %d", id, st, ok, snap.Index)
			}
		}
		if h := holder(t, c, "s-002"); h != other {
			t.Errorf("other session's shard lost: holder %q", h)
		}
		if m, ok := snap.Member("w"); !ok || m.Live() || m.Weight != 1 {
			t.Errorf("member after expiry = %+v, %v; want dead with its value", m, ok)
		}

		err := c.Sessions().Renew(ctx, sid)
		if !errors.Is(err, shard.ErrSessionInvalid) || !strings.Contains(err.Error(), string(sid)) {
			t.Fatalf("RenewSession after expiry = %v, want ErrSessionInvalid naming %s", err, sid)
		}
		for name, err := range map[string]error{
			"Acquire": func() error {
				_, err := c.Locks().Acquire(ctx, sid, []shard.Acquisition{shard.AcquireShard("s-000", "")})
				return err
			}(),
			"Join": c.Members().Join(ctx, sid, shard.Member{ID: "w"}),
		} {
			if !errors.Is(err, shard.ErrSessionInvalid) {
				t.Errorf("%s after expiry = %v, want ErrSessionInvalid", name, err)
			}
		}
	})
}

// TestRenewal: each renewal moves the deadline to renewal + TTL; the session
// survives past its first TTL, and dies exactly TTL after the last renewal.
// A renewal at exactly the deadline is too late.
func TestRenewal(t *testing.T) {
	const ttl = 10 * time.Second
	tests := []struct {
		name     string
		renewAt  []time.Duration // since creation
		wantDies time.Duration
	}{
		{"no renewal", nil, ttl},
		{"one renewal", []time.Duration{6 * time.Second}, 16 * time.Second},
		{"renewals", []time.Duration{6 * time.Second, 12 * time.Second, 21 * time.Second}, 31 * time.Second},
		{"renewal just in time", []time.Duration{ttl - time.Nanosecond}, 2*ttl - time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				c := memory.New()
				start := time.Now()
				sid := newSession(t, c, "w", ttl, 0)
				acquire(t, c, sid, "s-000")
				idx := snapshot(t, c).Index
				watch := watchAsync(ctx, c, idx)
				for _, at := range tt.renewAt {
					time.Sleep(start.Add(at).Sub(time.Now()))
					if err := c.Sessions().Renew(ctx, sid); err != nil {
						t.Fatalf("renew at %v: %v", at, err)
					}
				}
				res := <-watch
				if res.err != nil {
					t.Fatal(res.err)
				}
				if got := res.at.Sub(start); got != tt.wantDies {
					t.Fatalf("released after %v, want %v", got, tt.wantDies)
				}
				if err := c.Sessions().Renew(ctx, sid); !errors.Is(err, shard.ErrSessionInvalid) {
					t.Fatalf("renew at the deadline = %v, want ErrSessionInvalid", err)
				}
			})
		})
	}
}

// TestLockDelay: after an invalidation (an expiry, or a destroy, which may
// come from someone other than the session's worker) the released shards
// cannot be locked by anyone until LockDelay has passed; after a release
// they can at once.
func TestLockDelay(t *testing.T) {
	const (
		ttl   = 10 * time.Second
		delay = 5 * time.Second
	)
	expire := func(context.Context, *memory.Coordinator, shard.SessionID) error { time.Sleep(ttl); return nil }
	tests := []struct {
		name      string
		lockDelay time.Duration
		end       func(ctx context.Context, c *memory.Coordinator, sid shard.SessionID) error
		wantWait  time.Duration // after the end, before the shard can be locked
	}{
		{"expiry", delay, expire, delay},
		{"expiry without lock-delay", 0, expire, 0},
		{"destroy", delay, func(ctx context.Context, c *memory.Coordinator, sid shard.SessionID) error {
			return c.Sessions().Destroy(ctx, sid)
		}, delay},
		{"release", delay, func(ctx context.Context, c *memory.Coordinator, sid shard.SessionID) error {
			return c.Locks().Release(ctx, sid, shard.ShardLocks([]shard.ID{"s-000"}), "bye")
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				old := newSession(t, c, "old", ttl, tt.lockDelay)
				next := newSession(t, c, "next", time.Hour, 0)
				first := acquire(t, c, old, "s-000")["s-000"]
				if err := tt.end(t.Context(), c, old); err != nil {
					t.Fatal(err)
				}
				if h := holder(t, c, "s-000"); h != "" {
					t.Fatalf("still held by %s after the end", h)
				}
				if tt.wantWait > 0 {
					time.Sleep(tt.wantWait - time.Nanosecond)
					if got := acquire(t, c, next, "s-000"); len(got) != 0 {
						t.Fatalf("granted %v a nanosecond before lock-delay ends", got)
					}
					// The same worker's new session is locked out too.
					again := newSession(t, c, "old", ttl, 0)
					if got := acquire(t, c, again, "s-000"); len(got) != 0 {
						t.Fatalf("granted %v to the old worker's new session inside lock-delay", got)
					}
					time.Sleep(time.Nanosecond)
				}
				got := acquire(t, c, next, "s-000")
				if tok, ok := got["s-000"]; !ok || tok <= first {
					t.Fatalf("after %v: got %v, want s-000 with a token above %d", tt.wantWait, got, first)
				}
			})
		})
	}
}

func TestDestroySession(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	sid := newSession(t, c, "w", time.Hour, 0)
	idle := newSession(t, c, "idle", time.Hour, 0)
	acquire(t, c, sid, "s-000", "s-001")
	before := snapshot(t, c).Index

	if err := c.Sessions().Destroy(ctx, sid); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, c)
	if snap.Index != before+1 {
		t.Fatalf("destroy took %d writes, want one for all keys", snap.Index-before)
	}
	for _, s := range snap.Shards {
		if s.Held() {
			t.Errorf("%s still held", s.Shard)
		}
	}
	// A session that held nothing ends without a write; a missing one is fine.
	for _, id := range []shard.SessionID{idle, sid, "never"} {
		if err := c.Sessions().Destroy(ctx, id); err != nil {
			t.Errorf("DestroySession(%s) = %v", id, err)
		}
	}
	if idx := snapshot(t, c).Index; idx != before+1 {
		t.Fatalf("index moved to %d destroying sessions that held nothing", idx)
	}
	if s := c.LiveSessions(); len(s) != 0 {
		t.Fatalf("Sessions() = %v after destroying all", s)
	}
}

// TestCanceledContext: every method returns the context's cause at once and
// changes nothing.
func TestCanceledContext(t *testing.T) {
	c := memory.New()
	sid := newSession(t, c, "w", time.Hour, 0)
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)

	calls := map[string]func() error{
		"Configure": func() error { _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 1}); return err },
		"CreateSession": func() error {
			_, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "w", TTL: time.Second})
			return err
		},
		"RenewSession":   func() error { return c.Sessions().Renew(ctx, sid) },
		"DestroySession": func() error { return c.Sessions().Destroy(ctx, sid) },
		"Join":           func() error { return c.Members().Join(ctx, sid, shard.Member{ID: "w"}) },
		"Acquire": func() error {
			_, err := c.Locks().Acquire(ctx, sid, []shard.Acquisition{shard.AcquireShard("s", "")})
			return err
		},
		"Release": func() error { return c.Locks().Release(ctx, sid, shard.ShardLocks([]shard.ID{"s"}), "x") },
		"Watch":   func() error { _, err := c.Fleet().Watch(ctx, 0); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, cause) {
			t.Errorf("%s = %v, want the cause %v", name, err, cause)
		}
	}
	snap := snapshot(t, c)
	if snap.Index != 1 || snap.Config != nil || len(snap.Members) != 0 {
		t.Fatalf("canceled calls changed the store: %+v", snap)
	}
	if s := c.LiveSessions(); len(s) != 1 || s[0] != sid {
		t.Fatalf("Sessions() = %v, want [%s]", s, sid)
	}
}
