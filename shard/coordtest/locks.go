package coordtest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

func (s *suite) acquireRelease(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)

	grants, err := c.Locks().Acquire(ctx, a, []shard.Acquisition{
		shard.AcquireShard("s-001", "first"), shard.AcquireShard("s-000", "second"), shard.AcquireShard("s-001", "dup"),
	})
	if err != nil {
		t.Fatal(err)
	}
	claims := shard.Claims(grants)
	// Request order, the duplicate counted once, one transaction: one token.
	if len(claims) != 2 || claims[0].Shard != "s-001" || claims[1].Shard != "s-000" {
		t.Fatalf("claims = %v, want s-001 then s-000", claims)
	}
	if claims[0].Token == 0 || claims[0].Token != claims[1].Token {
		t.Fatalf("claims = %v, want one non-zero token for one transaction", claims)
	}
	tok := claims[0].Token
	snap := snapshot(t, c)
	st, ok := snap.Shard("s-001")
	if !ok || st.Session != a || st.Token != tok || st.Owner.Worker != "w-a" || st.Owner.Reason != "first" || st.Owner.Since.IsZero() {
		t.Fatalf("s-001 = %+v (found %v), want held by %s at %d with owner w-a, reason first, a time", st, ok, a, tok)
	}

	// Held by another session: left out, not an error.
	if got := acquire(t, c, b, "s-000"); len(got) != 0 {
		t.Fatalf("b got %v of a's shard", got)
	}
	// Mixed: only the free one is granted, with a later token.
	if got := acquire(t, c, b, "s-000", "s-002"); len(got) != 1 || got["s-002"] <= tok {
		t.Fatalf("b got %v, want only s-002 with a token above %d", got, tok)
	}

	// Release: only what a holds; the value keeps who and records why.
	release(t, c, a, "rebalanced to w-b", "s-000", "s-002", "s-000", "nope")
	snap = snapshot(t, c)
	st, _ = snap.Shard("s-000")
	if st.Held() || st.Owner.Worker != "w-a" || st.Owner.Reason != "second" || st.Owner.Released != "rebalanced to w-b" || st.Token <= tok {
		t.Fatalf("released s-000 = %+v, want free, owner w-a/second kept, released reason recorded, token above %d", st, tok)
	}
	if h := holder(t, c, "s-002"); h != b {
		t.Fatalf("s-002 held by %q after a's release, want %q", h, b)
	}
	if h := holder(t, c, "s-001"); h != a {
		t.Fatalf("s-001 held by %q, want %q: it was not released", h, a)
	}
	// Released without lock-delay: b takes it at once, with a new value.
	got := acquire(t, c, b, "s-000")
	if got["s-000"] <= st.Token {
		t.Fatalf("b's acquire after release = %v, want a token above %d", got, st.Token)
	}
	st, _ = snapshot(t, c).Shard("s-000")
	if st.Owner.Worker != "w-b" || st.Owner.Released != "" {
		t.Fatalf("new owner value = %+v, want w-b and no release reason", st.Owner)
	}
	// Releasing nothing held is fine.
	release(t, c, a, "x", "s-000")
}

func (s *suite) reacquireHeld(t *testing.T) {
	c := s.open(t)
	a := session(t, c, "w-a", long, 0)
	first := acquire(t, c, a, "s-000", "s-001")
	again := acquire(t, c, a, "s-001", "s-000", "s-002")
	for _, id := range []shard.ID{"s-000", "s-001"} {
		if again[id] != first[id] {
			t.Fatalf("re-acquire of held %s: token %d, want the current %d", id, again[id], first[id])
		}
	}
	if again["s-002"] <= first["s-000"] {
		t.Fatalf("s-002 token %d, want above %d", again["s-002"], first["s-000"])
	}
	// Now only held shards: the call must not write at all.
	idx := snapshot(t, c).Index
	if got := acquire(t, c, a, "s-000", "s-001", "s-002"); len(got) != 3 {
		t.Fatalf("re-acquire of three held shards = %v", got)
	}
	noWrite(t, c, idx, 300*time.Millisecond, "re-acquiring held shards")
}

// tokensIncrease: whatever way a shard changes hands, the next owner's token
// is higher than every earlier one, including after the key was deleted.
func (s *suite) tokensIncrease(t *testing.T) {
	c := s.open(t)
	const id = shard.ID("s-000")
	handoffs := []struct {
		name string
		end  func(t *testing.T, sid shard.SessionID)
	}{
		{"release", func(t *testing.T, sid shard.SessionID) { release(t, c, sid, "bye", id) }},
		{"destroy", func(t *testing.T, sid shard.SessionID) { destroy(t, c, sid) }},
		{"delete held key", func(t *testing.T, sid shard.SessionID) { s.o.operator.DeleteShard(t, c, id) }},
		{"delete free key", func(t *testing.T, sid shard.SessionID) {
			release(t, c, sid, "bye", id)
			s.o.operator.DeleteShard(t, c, id)
		}},
	}
	var last shard.Token
	for i, h := range handoffs {
		sid := session(t, c, fmt.Sprintf("w%d", i), long, 0)
		tok, ok := acquire(t, c, sid, id)[id]
		if !ok {
			t.Fatalf("before %s: shard not granted (holder %q)", h.name, holder(t, c, id))
		}
		if tok <= last {
			t.Fatalf("before %s: token %d not above previous %d", h.name, tok, last)
		}
		last = tok
		h.end(t, sid)
		if hd := holder(t, c, id); hd != "" {
			t.Fatalf("after %s: still held by %s", h.name, hd)
		}
		if h.name == "delete held key" {
			// The deleted key is gone; the session held it and no more.
			if st, ok := snapshot(t, c).Shard(id); ok {
				t.Fatalf("after delete: key still there: %+v", st)
			}
		}
	}
	sid := session(t, c, "last", long, 0)
	if tok := acquire(t, c, sid, id)[id]; tok <= last {
		t.Fatalf("final token %d not above %d", tok, last)
	}
}

// batch: an acquisition larger than one transaction is split, each batch
// with its own token, and all shards are granted; release takes them all.
func (s *suite) batch(t *testing.T) {
	c := s.open(t)
	const n = 150
	cfg := configure(t, c, n)
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)

	grants, err := c.Locks().Acquire(t.Context(), a, wantOf(cfg.IDs()...))
	if err != nil {
		t.Fatal(err)
	}
	claims := shard.Claims(grants)
	if len(claims) != n {
		t.Fatalf("granted %d shards, want %d", len(claims), n)
	}
	perToken := map[shard.Token]int{}
	for i, cl := range claims {
		if cl.Shard != cfg.IDs()[i] {
			t.Fatalf("claim %d is %s, want %s (request order)", i, cl.Shard, cfg.IDs()[i])
		}
		perToken[cl.Token]++
	}
	max := s.o.maxTxnShards
	if want := (n + max - 1) / max; len(perToken) != want {
		t.Fatalf("%d distinct tokens (shards per token %v), want %d transactions of at most %d", len(perToken), perToken, want, max)
	}
	for tok, k := range perToken {
		if k > max {
			t.Fatalf("token %d covers %d shards, more than one transaction's %d", tok, k, max)
		}
	}
	snap := snapshot(t, c)
	if len(snap.Shards) != n {
		t.Fatalf("snapshot has %d shard keys, want %d", len(snap.Shards), n)
	}
	for _, st := range snap.Shards {
		if st.Session != a {
			t.Fatalf("%s held by %q, want %q", st.Shard, st.Session, a)
		}
	}

	release(t, c, a, "shutdown", cfg.IDs()...)
	for _, st := range snapshot(t, c).Shards {
		if st.Held() || st.Owner.Released != "shutdown" {
			t.Fatalf("%s after releasing all = %+v", st.Shard, st)
		}
	}
	got := acquire(t, c, b, cfg.IDs()...)
	if len(got) != n {
		t.Fatalf("b got %d shards after a released all, want %d", len(got), n)
	}
	for _, cl := range claims {
		if got[cl.Shard] <= cl.Token {
			t.Fatalf("%s: b's token %d not above a's %d", cl.Shard, got[cl.Shard], cl.Token)
		}
	}
}

// concurrent: sessions fight over few shards. Each records its ownership
// between Acquire and Release; no two may overlap, and each shard's tokens
// grow with every new owner.
func (s *suite) concurrent(t *testing.T) {
	c := s.open(t)
	cfg := configure(t, c, 8)
	ids := cfg.IDs()
	const workers, rounds = 4, 15
	var (
		mu        sync.Mutex
		owner     = map[shard.ID]int{}
		lastToken = map[shard.ID]shard.Token{}
		granted   int
	)
	sids := make([]shard.SessionID, workers)
	for w := range workers {
		sids[w] = session(t, c, fmt.Sprintf("w%d", w), long, 0)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				want := []shard.Acquisition{shard.AcquireShard(ids[rand.IntN(len(ids))], ""), shard.AcquireShard(ids[rand.IntN(len(ids))], "")}
				grants, err := c.Locks().Acquire(t.Context(), sids[w], want)
				if err != nil {
					t.Error(err)
					return
				}
				claims := shard.Claims(grants)
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
				held := make([]shard.ID, len(claims))
				for i, cl := range claims {
					held[i] = cl.Shard
					delete(owner, cl.Shard) // stop acting as owner before releasing
				}
				mu.Unlock()
				if err := c.Locks().Release(t.Context(), sids[w], shard.ShardLocks(held), "done"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if granted == 0 {
		t.Fatal("no shard was ever granted")
	}
	for _, st := range snapshot(t, c).Shards {
		if st.Held() {
			t.Errorf("%s still held by %s", st.Shard, st.Session)
		}
	}
}
