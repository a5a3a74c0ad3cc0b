package coordtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// watchIndex: Watch(0) returns at once; Watch(current) blocks until the next
// write and returns a higher index; it returns the context's cause when the
// context ends first; calls that write nothing do not wake it.
func (s *suite) watchIndex(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	sid := session(t, c, "w", long, 0)
	acquire(t, c, sid, "s-000")

	start := time.Now()
	snap := snapshot(t, c)
	if snap.Index == 0 {
		t.Fatalf("Watch(0) returned index 0")
	}
	if d := time.Since(start); d > s.o.timing.Slack {
		t.Fatalf("Watch(0) took %v, want at once", d)
	}

	// Blocks until a write.
	const writeAfter = 300 * time.Millisecond
	wrote := make(chan error, 1)
	go func() {
		time.Sleep(writeAfter)
		_, err := c.Locks().Acquire(ctx, sid, wantOf("s-001"))
		wrote <- err
	}()
	start = time.Now()
	next, err := c.Fleet().Watch(ctx, snap.Index)
	waited := time.Since(start)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if next.Index <= snap.Index || waited < writeAfter-50*time.Millisecond {
		t.Fatalf("Watch(%d) returned index %d after %v, want a higher index after the write at %v", snap.Index, next.Index, waited, writeAfter)
	}
	if st, ok := next.Shard("s-001"); !ok || st.Session != sid {
		t.Fatalf("the write is not in the snapshot it woke: %s", describe(next))
	}
	if shard.NextIndex(snap.Index, next.Index) != next.Index {
		t.Fatalf("NextIndex(%d, %d) did not advance", snap.Index, next.Index)
	}

	// Ends with the context, with its cause.
	cause := errors.New("worker stopping")
	cctx, cancel := context.WithCancelCause(ctx)
	time.AfterFunc(writeAfter, func() { cancel(cause) })
	start = time.Now()
	if _, err := c.Fleet().Watch(cctx, next.Index); !errors.Is(err, cause) {
		t.Fatalf("Watch after cancel = %v, want the cause", err)
	}
	if d := time.Since(start); d < writeAfter-50*time.Millisecond || d > writeAfter+s.o.timing.Slack {
		t.Fatalf("Watch returned %v after its context was canceled at %v", d, writeAfter)
	}
	dctx, dcancel := context.WithTimeout(ctx, writeAfter)
	defer dcancel()
	if _, err := c.Fleet().Watch(dctx, next.Index); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Watch past its deadline = %v, want DeadlineExceeded", err)
	}

	// Writing nothing wakes nobody: a new session, a re-acquire of held
	// shards, a release of shards not held.
	other := session(t, c, "other", long, 0)
	acquire(t, c, sid, "s-000", "s-001")
	release(t, c, other, shard.ReasonRebalance, "s-000")
	noWrite(t, c, next.Index, writeAfter, "calls that change nothing")
}

func (s *suite) configure(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	if snap := snapshot(t, c); snap.Config != nil {
		t.Fatalf("fresh fleet has a config: %+v", snap.Config)
	}
	got, err := c.Fleet().Configure(ctx, shard.Config{Shards: 8})
	want := shard.Config{Shards: 8, Name: shard.DefaultName, Protocol: shard.Protocol}
	if err != nil || !got.Same(want) {
		t.Fatalf("first Configure = %+v, %v; want %+v", got, err, want)
	}
	for _, same := range []shard.Config{{Shards: 8}, {Shards: 8, Name: shard.DefaultName}, {Shards: 8, Protocol: shard.Protocol}} {
		if got, err := c.Fleet().Configure(ctx, same); err != nil || !got.Same(want) {
			t.Fatalf("Configure(%+v) again = %+v, %v; want %+v", same, got, err, want)
		}
	}
	got, err = c.Fleet().Configure(ctx, shard.Config{Shards: 9, Name: "other"})
	if !errors.Is(err, shard.ErrConfigMismatch) || !got.Same(want) {
		t.Fatalf("Configure with a different config = %+v, %v; want the stored %+v and ErrConfigMismatch", got, err, want)
	}
	// The refusal is what a worker started with the wrong config prints:
	// it must name both configs.
	for _, part := range []string{"8", `"` + shard.DefaultName + `"`, "9", `"other"`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("mismatch error %q does not name %s", err, part)
		}
	}
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 0}); !errors.Is(err, shard.ErrInvalidConfig) {
		t.Fatalf("Configure with 0 shards = %v, want ErrInvalidConfig", err)
	}
	if snap := snapshot(t, c); snap.Config == nil || !snap.Config.Same(want) {
		t.Fatalf("snapshot config = %+v, want %+v", snap.Config, want)
	}
}

// configureProtocol: a fleet runs one protocol. A worker that brings
// another one than the fleet stored, older or newer, is refused with
// ErrConfigMismatch naming both protocols and saying there are no mixed
// fleets; it gets the stored config, and nothing is written.
func (s *suite) configureProtocol(t *testing.T) {
	for _, tt := range []struct{ stored, brought int }{{1, 0}, {0, 1}, {0, shard.Protocol + 1}} {
		t.Run(fmt.Sprintf("stored %d brought %d", tt.stored, tt.brought), func(t *testing.T) {
			c := s.open(t)
			stored, err := c.Fleet().Configure(t.Context(), shard.Config{Shards: 8, Protocol: tt.stored})
			if err != nil {
				t.Fatal(err)
			}
			idx := snapshot(t, c).Index
			got, err := c.Fleet().Configure(t.Context(), shard.Config{Shards: 8, Protocol: tt.brought})
			if !errors.Is(err, shard.ErrConfigMismatch) || !got.Same(stored) {
				t.Fatalf("Configure with protocol %d on a protocol %d fleet = %+v, %v; want %+v and ErrConfigMismatch", tt.brought, tt.stored, got, err, stored)
			}
			brought := shard.Config{Shards: 8, Protocol: tt.brought}.Normalize()
			for _, part := range []string{fmt.Sprintf("protocol %d", stored.Protocol), fmt.Sprintf("protocol %d", brought.Protocol), "no mixed fleets"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("mismatch error %q does not say %q", err, part)
				}
			}
			if strings.Contains(err.Error(), "shards named") {
				t.Errorf("mismatch error %q speaks of the shard set, which is the same", err)
			}
			if now := snapshot(t, c).Index; now != idx {
				t.Errorf("the refused Configure wrote: index %d -> %d", idx, now)
			}
		})
	}
}

// join: a member key is taken, updated by its own session, refused to
// another live session, and free again once its session ends.
func (s *suite) join(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	a := session(t, c, "a", long, 0)
	b := session(t, c, "b", long, 0)
	join(t, c, a, shard.Member{ID: "w2", Weight: 1})
	if err := c.Members().Join(ctx, a, shard.Member{ID: "w2", Weight: 2, Address: "10.0.0.1:80"}); err != nil {
		t.Fatalf("update by the holder: %v", err)
	}
	err := c.Members().Join(ctx, b, shard.Member{ID: "w2"})
	if !errors.Is(err, shard.ErrMemberExists) {
		t.Fatalf("Join of a held id = %v, want ErrMemberExists", err)
	}
	join(t, c, b, shard.Member{ID: "w1", Weight: 1})
	snap := snapshot(t, c)
	ids := make([]string, len(snap.Members))
	for i, m := range snap.Members {
		ids[i] = m.ID
	}
	if !slices.Equal(ids, []string{"w1", "w2"}) {
		t.Fatalf("members %v, want [w1 w2] (sorted)", ids)
	}
	if m, _ := snap.Member("w2"); m.Session != a || m.Weight != 2 || m.Address != "10.0.0.1:80" {
		t.Fatalf("w2 = %+v, want held by %s with the updated value", m, a)
	}

	destroy(t, c, a)
	if m, ok := snapshot(t, c).Member("w2"); !ok || m.Live() {
		t.Fatalf("w2 after its session ended = %+v (found %v), want dead", m, ok)
	}
	if err := c.Members().Join(ctx, b, shard.Member{ID: "w2", Weight: 5}); err != nil {
		t.Fatalf("Join of a dead member's id: %v", err)
	}
	if m, _ := snapshot(t, c).Member("w2"); m.Session != b || m.Weight != 5 {
		t.Fatalf("w2 after re-join = %+v", m)
	}
}
