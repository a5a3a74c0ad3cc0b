package memory_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestWatchIndex(t *testing.T) {
	const writeAfter = 3 * time.Second
	tests := []struct {
		name      string
		after     func(current uint64) uint64
		wantWait  time.Duration // 0: returns at once
		wantIndex func(current uint64) uint64
	}{
		{"zero returns at once", func(uint64) uint64 { return 0 }, 0, same},
		{"behind returns at once", func(cur uint64) uint64 { return cur - 1 }, 0, same},
		{"ahead (reset) returns at once", func(cur uint64) uint64 { return cur + 5 }, 0, same},
		{"current blocks until the next write", same, writeAfter, func(cur uint64) uint64 { return cur + 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				c := memory.New()
				sid := newSession(t, c, "w", time.Hour, 0)
				acquire(t, c, sid, "s-000")
				cur := snapshot(t, c).Index
				start := time.Now()

				res := watchAsync(ctx, c, tt.after(cur))
				time.Sleep(writeAfter)
				acquire(t, c, sid, "s-001")
				r := <-res
				if r.err != nil {
					t.Fatal(r.err)
				}
				if got := r.at.Sub(start); got != tt.wantWait {
					t.Errorf("returned after %v, want %v", got, tt.wantWait)
				}
				if want := tt.wantIndex(cur); r.snap.Index != want {
					t.Errorf("index %d, want %d", r.snap.Index, want)
				}
			})
		})
	}
}

func same(i uint64) uint64 { return i }

func TestWatchFreshStore(t *testing.T) {
	c := memory.New()
	snap := snapshot(t, c)
	if snap.Index != 1 || snap.Config != nil || len(snap.Members) != 0 || len(snap.Shards) != 0 {
		t.Fatalf("fresh snapshot = %+v, want index 1 and nothing else", snap)
	}
	if got := shard.NextIndex(0, snap.Index); got != 1 {
		t.Fatalf("NextIndex(0, %d) = %d", snap.Index, got)
	}
	c = memory.New(memory.WithStartIndex(1000))
	sid := newSession(t, c, "w", time.Hour, 0)
	if tok := acquire(t, c, sid, "s-000")["s-000"]; tok != 1001 {
		t.Fatalf("first token with WithStartIndex(1000) = %d, want 1001", tok)
	}
}

func TestWatchContextEnds(t *testing.T) {
	cause := errors.New("worker stopping")
	tests := []struct {
		name    string
		ctx     func(parent context.Context) (context.Context, func())
		wantErr error
	}{
		{"cancel with cause", func(p context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(p)
			time.AfterFunc(2*time.Second, func() { cancel(cause) })
			return ctx, func() { cancel(nil) }
		}, cause},
		{"deadline", func(p context.Context) (context.Context, func()) {
			return context.WithTimeout(p, 2*time.Second)
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				idx := snapshot(t, c).Index
				ctx, cancel := tt.ctx(t.Context())
				defer cancel()
				start := time.Now()
				snap, err := c.Fleet().Watch(ctx, idx)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Watch = %v, want %v", err, tt.wantErr)
				}
				if snap.Index != 0 {
					t.Fatalf("snapshot %+v returned with an error", snap)
				}
				if got := time.Since(start); got != 2*time.Second {
					t.Fatalf("returned after %v, want 2s", got)
				}
			})
		})
	}
}

// TestSnapshot: a snapshot is consistent, sorted, and a copy.
func TestSnapshot(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 4}); err != nil {
		t.Fatal(err)
	}
	a := newSession(t, c, "b-worker", time.Hour, 0)
	b := newSession(t, c, "a-worker", time.Hour, 0)
	for sid, id := range map[shard.SessionID]string{a: "b-worker", b: "a-worker"} {
		if err := c.Members().Join(ctx, sid, shard.Member{ID: id, Weight: 1}); err != nil {
			t.Fatal(err)
		}
	}
	acquire(t, c, a, "stream/shard-003", "stream/shard-001")
	acquire(t, c, b, "stream/shard-002")

	snap := snapshot(t, c)
	if snap.Config == nil || snap.Config.Shards != 4 || snap.Config.Name != shard.DefaultName {
		t.Fatalf("config = %+v", snap.Config)
	}
	var members []string
	for _, m := range snap.Members {
		members = append(members, m.ID)
	}
	if !slices.Equal(members, []string{"a-worker", "b-worker"}) {
		t.Fatalf("members = %v, want sorted", members)
	}
	var shards []shard.ID
	for _, s := range snap.Shards {
		shards = append(shards, s.Shard)
	}
	if !slices.Equal(shards, []shard.ID{"stream/shard-001", "stream/shard-002", "stream/shard-003"}) {
		t.Fatalf("shards = %v, want the existing keys, sorted", shards)
	}

	snap.Config.Shards = 99
	snap.Shards[0].Session = "forged"
	again := snapshot(t, c)
	if again.Config.Shards != 4 || again.Shards[0].Session != a {
		t.Fatal("modifying a snapshot changed the coordinator")
	}
}
