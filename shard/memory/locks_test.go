package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestAcquireRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		c := memory.New()
		a := newSession(t, c, "w-a", time.Hour, 0)
		b := newSession(t, c, "w-b", time.Hour, 0)
		start := time.Now()

		claims, err := c.Locks().Acquire(ctx, a, []shard.Acquisition{
			shard.AcquireShard("s-001", shard.Why{Reason: shard.ReasonInitial}), shard.AcquireShard("s-000", shard.Why{Reason: shard.ReasonOrphaned, From: "w-z"}),
			shard.AcquireShard("s-001", shard.Why{Reason: shard.ReasonLoad}),
		})
		if err != nil {
			t.Fatal(err)
		}
		// One transaction at index 2 (the empty store is at 1); request order;
		// the duplicate counted once.
		want := []shard.Grant{{Lock: shard.ShardLock("s-001"), Token: 2}, {Lock: shard.ShardLock("s-000"), Token: 2}}
		if fmt.Sprint(claims) != fmt.Sprint(want) {
			t.Fatalf("claims = %v, want %v", claims, want)
		}
		st, _ := snapshot(t, c).Shard("s-001")
		wantState := shard.ShardState{Shard: "s-001", Session: a, Token: 2,
			Owner: shard.Owner{Worker: "w-a", Why: shard.Why{Reason: shard.ReasonInitial}, Since: start}}
		if st != wantState {
			t.Fatalf("s-001 = %+v, want %+v", st, wantState)
		}

		tests := []struct {
			name      string
			sid       shard.SessionID
			ids       []shard.ID
			want      map[shard.ID]shard.Token
			wantIndex uint64 // index after the call
		}{
			{"held by self: current token, no write", a, []shard.ID{"s-000", "s-001"}, map[shard.ID]shard.Token{"s-000": 2, "s-001": 2}, 2},
			{"held by other: left out, no write", b, []shard.ID{"s-000"}, map[shard.ID]shard.Token{}, 2},
			{"mixed: only the free one is written", b, []shard.ID{"s-000", "s-002"}, map[shard.ID]shard.Token{"s-002": 3}, 3},
			{"empty request: no write", b, nil, map[shard.ID]shard.Token{}, 3},
		}
		for _, tt := range tests {
			got := acquire(t, c, tt.sid, tt.ids...)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			}
			if idx := snapshot(t, c).Index; idx != tt.wantIndex {
				t.Errorf("%s: index %d, want %d", tt.name, idx, tt.wantIndex)
			}
		}

		// Release: only what a holds; the value keeps who and records why.
		time.Sleep(time.Second)
		if err := c.Locks().Release(ctx, a, shard.ShardLocks([]shard.ID{"s-000", "s-002", "s-000", "nope"}), shard.ReasonRebalance); err != nil {
			t.Fatal(err)
		}
		snap := snapshot(t, c)
		if snap.Index != 4 {
			t.Fatalf("index after release = %d, want 4", snap.Index)
		}
		st, _ = snap.Shard("s-000")
		wantState = shard.ShardState{Shard: "s-000", Token: 4,
			Owner: shard.Owner{Worker: "w-a", Why: shard.Why{Reason: shard.ReasonOrphaned, From: "w-z"}, Since: start, Released: shard.ReasonRebalance}}
		if st != wantState {
			t.Fatalf("released s-000 = %+v, want %+v", st, wantState)
		}
		if h := holder(t, c, "s-002"); h != b {
			t.Fatalf("s-002 held by %q, want %q (a's release must not touch it)", h, b)
		}
		// Released without lock-delay: b takes it at once, with a new value.
		if got := acquire(t, c, b, "s-000"); got["s-000"] != 5 {
			t.Fatalf("b's acquire after release = %v, want token 5", got)
		}
		st, _ = snapshot(t, c).Shard("s-000")
		if st.Owner != (shard.Owner{Worker: "w-b", Why: shard.Why{Reason: shard.ReasonInitial}, Since: start.Add(time.Second)}) {
			t.Fatalf("new owner value = %+v", st.Owner)
		}
		// Releasing nothing held is no write.
		if err := c.Locks().Release(ctx, a, shard.ShardLocks([]shard.ID{"s-000"}), shard.ReasonRebalance); err != nil {
			t.Fatal(err)
		}
		if idx := snapshot(t, c).Index; idx != 5 {
			t.Fatalf("index after empty release = %d, want 5", idx)
		}
	})
}

func TestAcquireErrors(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 4}); err != nil {
		t.Fatal(err)
	}
	sid := newSession(t, c, "w", time.Hour, 0)
	gone := newSession(t, c, "w2", time.Hour, 0)
	if err := c.Sessions().Destroy(ctx, gone); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, c).Index

	tests := []struct {
		name    string
		sid     shard.SessionID
		ids     []shard.ID
		wantErr error
		wantMsg string
	}{
		{"unknown shard", sid, []shard.ID{"stream/shard-000", "stream/shard-004"}, shard.ErrUnknownShard, `"stream/shard-004"`},
		{"empty shard id", sid, []shard.ID{"stream/shard-001", ""}, shard.ErrInvalidArgument, "empty"},
		{"gone session", gone, []shard.ID{"stream/shard-000"}, shard.ErrSessionInvalid, string(gone)},
		{"never created", "nobody", []shard.ID{"stream/shard-000"}, shard.ErrSessionInvalid, "nobody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := make([]shard.Acquisition, len(tt.ids))
			for i, id := range tt.ids {
				want[i] = shard.AcquireShard(id, shard.Why{})
			}
			claims, err := c.Locks().Acquire(ctx, tt.sid, want)
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want %v naming %s", err, tt.wantErr, tt.wantMsg)
			}
			if claims != nil {
				t.Fatalf("claims = %v on error", claims)
			}
			if snap := snapshot(t, c); snap.Index != before || len(snap.Shards) != 0 {
				t.Fatalf("failed call wrote: index %d (was %d), shards %v", snap.Index, before, snap.Shards)
			}
		})
	}

	for _, sid := range []shard.SessionID{gone, "nobody"} {
		if err := c.Locks().Release(ctx, sid, shard.ShardLocks([]shard.ID{"stream/shard-000"}), shard.ReasonRebalance); !errors.Is(err, shard.ErrSessionInvalid) {
			t.Errorf("Release(%s) = %v, want ErrSessionInvalid", sid, err)
		}
	}
}

// TestBatching: Consul caps a transaction, so 150 shards take three
// transactions (64 + 64 + 22), each with its own index, and all are granted.
func TestBatching(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	cfg, err := c.Fleet().Configure(ctx, shard.Config{Shards: 150})
	if err != nil {
		t.Fatal(err)
	}
	sid := newSession(t, c, "w", time.Hour, 0)
	before := snapshot(t, c).Index

	got := acquire(t, c, sid, cfg.IDs()...)
	if len(got) != 150 {
		t.Fatalf("granted %d shards, want 150", len(got))
	}
	perToken := map[shard.Token]int{}
	for _, tok := range got {
		perToken[tok]++
	}
	want := map[shard.Token]int{
		shard.Token(before + 1): memory.MaxTxnShards,
		shard.Token(before + 2): memory.MaxTxnShards,
		shard.Token(before + 3): 150 - 2*memory.MaxTxnShards,
	}
	if fmt.Sprint(perToken) != fmt.Sprint(want) {
		t.Fatalf("shards per token = %v, want %v", perToken, want)
	}
	if idx := snapshot(t, c).Index; idx != before+3 {
		t.Fatalf("index = %d, want %d", idx, before+3)
	}

	if err := c.Locks().Release(ctx, sid, shard.ShardLocks(cfg.IDs()), shard.ReasonShutdown); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, c)
	if snap.Index != before+6 {
		t.Fatalf("index after releasing 150 = %d, want %d (three transactions)", snap.Index, before+6)
	}
	for _, s := range snap.Shards {
		if s.Held() {
			t.Fatalf("%s still held after release", s.Shard)
		}
	}
}

// TestTokensIncrease: whatever way a shard changes hands, the next owner's
// token is higher than every earlier one, including after the key was deleted.
func TestTokensIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		c := memory.New()
		const id = shard.ID("s-000")
		const ttl = 10 * time.Second

		handoffs := []struct {
			name string
			end  func(t *testing.T, sid shard.SessionID)
		}{
			{"release", func(t *testing.T, sid shard.SessionID) {
				if err := c.Locks().Release(ctx, sid, shard.ShardLocks([]shard.ID{id}), shard.ReasonRebalance); err != nil {
					t.Fatal(err)
				}
			}},
			{"destroy", func(t *testing.T, sid shard.SessionID) {
				if err := c.Sessions().Destroy(ctx, sid); err != nil {
					t.Fatal(err)
				}
			}},
			{"expire", func(t *testing.T, sid shard.SessionID) { time.Sleep(ttl) }},
			{"delete held key", func(t *testing.T, sid shard.SessionID) {
				if !c.DeleteShard(id) {
					t.Fatal("DeleteShard: key did not exist")
				}
			}},
			{"delete free key", func(t *testing.T, sid shard.SessionID) {
				if err := c.Locks().Release(ctx, sid, shard.ShardLocks([]shard.ID{id}), shard.ReasonRebalance); err != nil {
					t.Fatal(err)
				}
				if !c.DeleteShard(id) {
					t.Fatal("DeleteShard: key did not exist")
				}
				if c.DeleteShard(id) {
					t.Fatal("DeleteShard twice: reported the key existed")
				}
			}},
		}
		var last shard.Token
		for i, h := range handoffs {
			sid := newSession(t, c, fmt.Sprintf("w%d", i), ttl, 0)
			tok, ok := acquire(t, c, sid, id)[id]
			if !ok {
				t.Fatalf("before %s: shard not granted", h.name)
			}
			if tok <= last {
				t.Fatalf("before %s: token %d not above previous %d", h.name, tok, last)
			}
			last = tok
			h.end(t, sid)
			if hd := holder(t, c, id); hd != "" {
				t.Fatalf("after %s: still held by %s", h.name, hd)
			}
		}
		sid := newSession(t, c, "last", ttl, 0)
		if tok := acquire(t, c, sid, id)[id]; tok <= last {
			t.Fatalf("final token %d not above %d", tok, last)
		}
	})
}

// TestConcurrentAcquirers: many sessions fight over few shards under -race.
// Each records its ownership between Acquire and Release; no two may ever
// overlap, and each shard's tokens must grow with every new owner.
func TestConcurrentAcquirers(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	cfg, err := c.Fleet().Configure(ctx, shard.Config{Shards: 8})
	if err != nil {
		t.Fatal(err)
	}
	ids := cfg.IDs()

	var (
		mu        sync.Mutex
		owner     = map[shard.ID]int{}
		lastToken = map[shard.ID]shard.Token{}
		granted   int
	)
	// A watcher checks every snapshot it sees: the index only grows, and so
	// does each shard's token.
	watchCtx, stopWatch := context.WithCancel(ctx)
	watcher := make(chan error, 1)
	go func() {
		var idx uint64
		seen := map[shard.ID]shard.Token{}
		for {
			snap, err := c.Fleet().Watch(watchCtx, idx)
			if err != nil {
				watcher <- nil
				return
			}
			if snap.Index <= idx {
				watcher <- fmt.Errorf("index went from %d to %d", idx, snap.Index)
				return
			}
			for _, s := range snap.Shards {
				if s.Token < seen[s.Shard] {
					watcher <- fmt.Errorf("%s token went from %d to %d", s.Shard, seen[s.Shard], s.Token)
					return
				}
				seen[s.Shard] = s.Token
			}
			idx = shard.NextIndex(idx, snap.Index)
		}
	}()

	var wg sync.WaitGroup
	for w := range 16 {
		sid := newSession(t, c, fmt.Sprintf("w%d", w), time.Hour, 0)
		wg.Go(func() {
			for range 200 {
				want := []shard.Acquisition{shard.AcquireShard(ids[rand.IntN(len(ids))], shard.Why{}), shard.AcquireShard(ids[rand.IntN(len(ids))], shard.Why{})}
				grants, err := c.Locks().Acquire(ctx, sid, want)
				if err != nil {
					t.Error(err)
					return
				}
				var claims []shard.Claim
				for _, g := range grants {
					cl, _ := g.Claim()
					claims = append(claims, cl)
				}
				mu.Lock()
				for _, cl := range claims {
					if o, ok := owner[cl.Shard]; ok {
						t.Errorf("%s granted to w%d while w%d holds it", cl.Shard, w, o)
					}
					if cl.Token <= lastToken[cl.Shard] {
						t.Errorf("%s token %d not above %d", cl.Shard, cl.Token, lastToken[cl.Shard])
					}
					owner[cl.Shard], lastToken[cl.Shard] = w, cl.Token
					granted++
				}
				mu.Unlock()

				held := make([]shard.ID, len(claims))
				mu.Lock()
				for i, cl := range claims {
					held[i] = cl.Shard
					delete(owner, cl.Shard) // stop acting as owner before releasing
				}
				mu.Unlock()
				if err := c.Locks().Release(ctx, sid, shard.ShardLocks(held), shard.ReasonRebalance); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	stopWatch()
	if err := <-watcher; err != nil {
		t.Error(err)
	}
	if granted == 0 {
		t.Fatal("no shard was ever granted")
	}
	for _, s := range snapshot(t, c).Shards {
		if s.Held() {
			t.Errorf("%s still held by %s", s.Shard, s.Session)
		}
	}
}

// TestLazyCatchUp: with timers that never fire, each call still applies what
// is due, as of the moment it fell due: a lock-delay counts from the
// session's deadline, not from when someone noticed.
func TestLazyCatchUp(t *testing.T) {
	ctx := t.Context()
	clk := &manualClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := memory.New(memory.WithClock(clk), memory.WithMemberGrace(15*time.Second))
	a := newSession(t, c, "a", 10*time.Second, 15*time.Second)
	b := newSession(t, c, "b", time.Hour, 0)
	acquire(t, c, a, "s-000")
	// Two members die with a; both deletions fall due at 25 s.
	for _, m := range []string{"a", "a-sidecar"} {
		if err := c.Members().Join(ctx, a, shard.Member{ID: m}); err != nil {
			t.Fatal(err)
		}
	}

	clk.Advance(24 * time.Second) // a expired at 10 s; delay until 25 s
	if got := acquire(t, c, b, "s-000"); len(got) != 0 {
		t.Fatalf("granted at 24 s, inside lock-delay: %v", got)
	}
	if m, ok := snapshot(t, c).Member("a"); !ok || m.Live() {
		t.Fatalf("member a at 24 s = %+v, %v; want present and dead", m, ok)
	}
	clk.Advance(time.Second)
	// One call applies everything due, not one event per call.
	if snap := snapshot(t, c); len(snap.Members) != 0 {
		t.Fatalf("dead members still present at 25 s (grace ended): %+v", snap.Members)
	}
	if got := acquire(t, c, b, "s-000"); len(got) != 1 {
		t.Fatalf("not granted at 25 s, when lock-delay ends: %v", got)
	}
	if got := c.LiveSessions(); fmt.Sprint(got) != fmt.Sprint([]shard.SessionID{b}) {
		t.Fatalf("Sessions() = %v, want [%s]", got, b)
	}
}

// TestStartToken: a coordinator started above a token of generation 1
// hands out tokens above it, stores its config in that generation, and
// refuses, rather than repeats, tokens once its index would not fit one.
func TestStartToken(t *testing.T) {
	ctx := context.Background()
	floor, err := shard.MakeToken(1, 500)
	if err != nil {
		t.Fatal(err)
	}
	c := memory.New(memory.WithStartToken(floor))
	cfg, err := c.Fleet().Configure(ctx, shard.Config{Shards: 2})
	if err != nil || cfg.Generation != 1 {
		t.Fatalf("Configure = %+v, %v; want generation 1", cfg, err)
	}
	sid, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	grants, err := c.Locks().Acquire(ctx, sid, []shard.Acquisition{shard.AcquireShard(cfg.IDs()[0], shard.Why{Reason: shard.ReasonInitial})})
	if err != nil || len(grants) != 1 || grants[0].Token <= floor {
		t.Fatalf("Acquire = %v, %v; want a token above %d", grants, err, floor)
	}

	full := memory.New(memory.WithStartIndex(shard.MaxIndex))
	if _, err := full.Fleet().Configure(ctx, shard.Config{Shards: 2}); err != nil {
		t.Fatal(err)
	}
	sid, err = full.Sessions().Create(ctx, shard.SessionSpec{Worker: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := full.Locks().Acquire(ctx, sid, []shard.Acquisition{shard.AcquireShard(cfg.IDs()[0], shard.Why{Reason: shard.ReasonInitial})}); !errors.Is(err, shard.ErrUnavailable) {
		t.Errorf("Acquire at the last index = %v, want ErrUnavailable: two owners would share a token", err)
	}
}
