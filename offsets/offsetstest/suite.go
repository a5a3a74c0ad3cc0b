package offsetstest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// OpenFunc opens a Store on a fresh, empty namespace: a new map, a new file
// in tb.TempDir(), a new Consul prefix or PostgreSQL schema. It fails tb when
// it cannot. The suite closes every store it opens (closing twice must
// return nil), so OpenFunc need not; it may register its own tb.Cleanup to
// drop the namespace.
type OpenFunc func(tb testing.TB) offsets.Store

// Run runs the conformance suite against the stores open returns, one fresh
// store per subtest.
func Run(t *testing.T, open OpenFunc) {
	for _, c := range scripts {
		t.Run(c.name, func(t *testing.T) { c.run(t, mustOpen(t, open)) })
	}
	t.Run("namespaces are fresh", func(t *testing.T) { testFresh(t, open) })
	t.Run("done context", func(t *testing.T) { testDoneContext(t, mustOpen(t, open)) })
	t.Run("use after close", func(t *testing.T) { testClosed(t, mustOpen(t, open)) })
	t.Run("concurrent mixed tokens", func(t *testing.T) { testConcurrent(t, mustOpen(t, open)) })
}

func mustOpen(tb testing.TB, open OpenFunc) offsets.Store {
	tb.Helper()
	st := open(tb)
	if st == nil {
		tb.Fatal("open returned a nil Store")
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return st
}

// step is one call in a script: a commit, a fence or a load, and what it must
// return.
type step struct {
	kind    string // "commit", "fence", "load"
	shard   shard.ID
	token   shard.Token
	offset  int64
	wantErr error              // nil: must succeed
	wantMsg string             // substring the error must contain
	wantCP  offsets.Checkpoint // for loads
}

func commit(s shard.ID, t shard.Token, off int64) step {
	return step{kind: "commit", shard: s, token: t, offset: off}
}
func fence(s shard.ID, t shard.Token) step { return step{kind: "fence", shard: s, token: t} }
func load(s shard.ID, cp offsets.Checkpoint) step {
	return step{kind: "load", shard: s, wantCP: cp}
}

// stale marks the step as rejected for a token below floor; the message
// must name the shard, the token and the floor.
func (s step) stale(floor shard.Token) step {
	s.wantErr = offsets.ErrStaleToken
	s.wantMsg = fmt.Sprintf("shard %s: token %d is below floor %d", s.shard, s.token, floor)
	return s
}

func (s step) fails(err error, msg string) step { s.wantErr, s.wantMsg = err, msg; return s }

func (s step) String() string {
	switch s.kind {
	case "commit":
		return fmt.Sprintf("Commit(%q, %d, %d)", s.shard, s.token, s.offset)
	case "fence":
		return fmt.Sprintf("Fence(%q, %d)", s.shard, s.token)
	}
	return fmt.Sprintf("Load(%q)", s.shard)
}

func (s step) do(ctx context.Context, st offsets.Store) (offsets.Checkpoint, error) {
	switch s.kind {
	case "commit":
		return offsets.Checkpoint{}, st.Commit(ctx, s.shard, s.token, s.offset)
	case "fence":
		return offsets.Checkpoint{}, st.Fence(ctx, s.shard, s.token)
	}
	return st.Load(ctx, s.shard)
}

// script is a sequence of steps on one fresh store, then the checkpoints it
// must hold. Checking the final state after a rejected step is what shows
// that a rejection wrote nothing.
type script struct {
	name  string
	steps []step
	want  map[shard.ID]offsets.Checkpoint
}

type cp = offsets.Checkpoint

const (
	a = shard.ID("stream/shard-000")
	b = shard.ID("stream/shard-001")
)

var scripts = []script{
	{name: "unknown shard loads as zero", want: map[shard.ID]cp{a: {}}},
	{name: "commit then load",
		steps: []step{commit(a, 5, 100)},
		want:  map[shard.ID]cp{a: {Offset: 100, Token: 5, Floor: 5}}},
	{name: "stale commit rejected, checkpoint unchanged",
		steps: []step{commit(a, 5, 100), fence(a, 10), commit(a, 9, 150).stale(10), commit(a, 5, 150).stale(10)},
		want:  map[shard.ID]cp{a: {Offset: 100, Token: 5, Floor: 10}}},
	{name: "equal token overwrites",
		steps: []step{commit(a, 5, 100), commit(a, 5, 90), commit(a, 5, 95)},
		want:  map[shard.ID]cp{a: {Offset: 95, Token: 5, Floor: 5}}},
	{name: "higher token raises the floor",
		steps: []step{commit(a, 5, 100), commit(a, 7, 120), commit(a, 6, 130).stale(7), fence(a, 6).stale(7)},
		want:  map[shard.ID]cp{a: {Offset: 120, Token: 7, Floor: 7}}},
	{name: "fence keeps the offset",
		steps: []step{commit(a, 3, 100), fence(a, 8), load(a, cp{Offset: 100, Token: 3, Floor: 8})},
		want:  map[shard.ID]cp{a: {Offset: 100, Token: 3, Floor: 8}}},
	{name: "fence on an unknown shard",
		steps: []step{fence(a, 4)},
		want:  map[shard.ID]cp{a: {Floor: 4}}},
	{name: "fence with a lower token rejected",
		steps: []step{fence(a, 8), fence(a, 7).stale(8), commit(a, 7, 1).stale(8)},
		want:  map[shard.ID]cp{a: {Floor: 8}}},
	{name: "fence with an equal token is a no-op",
		steps: []step{commit(a, 8, 5), fence(a, 8)},
		want:  map[shard.ID]cp{a: {Offset: 5, Token: 8, Floor: 8}}},
	{name: "commit with the fenced token",
		steps: []step{fence(a, 8), commit(a, 8, 110)},
		want:  map[shard.ID]cp{a: {Offset: 110, Token: 8, Floor: 8}}},
	// The handoff of DESIGN.md: the new owner fences, then loads, and sees
	// everything the old owner committed before the fence and nothing after.
	{name: "handoff",
		steps: []step{
			commit(a, 5, 100), // old owner
			fence(a, 7),       // new owner acquires
			load(a, cp{Offset: 100, Token: 5, Floor: 7}),
			commit(a, 5, 110).stale(7), // old owner, paused, wakes up
			commit(a, 7, 120),          // new owner
		},
		want: map[shard.ID]cp{a: {Offset: 120, Token: 7, Floor: 7}}},
	{name: "negative offset rejected, floor not raised",
		steps: []step{
			commit(a, 1, 5),
			commit(a, 2, -1).fails(offsets.ErrInvalidOffset, "-1"),
			commit(b, 1, math.MinInt64).fails(offsets.ErrInvalidOffset, fmt.Sprint(int64(math.MinInt64))),
		},
		want: map[shard.ID]cp{a: {Offset: 5, Token: 1, Floor: 1}, b: {}}},
	{name: "zero token rejected",
		steps: []step{
			commit(a, 0, 1).fails(shard.ErrInvalidArgument, "token 0"),
			fence(a, 0).fails(shard.ErrInvalidArgument, "token 0"),
		},
		want: map[shard.ID]cp{a: {}}},
	{name: "empty shard ID rejected",
		steps: []step{
			commit("", 1, 1).fails(shard.ErrInvalidArgument, "shard ID"),
			fence("", 1).fails(shard.ErrInvalidArgument, "shard ID"),
			load("", cp{}).fails(shard.ErrInvalidArgument, "shard ID"),
		}},
	{name: "shards are independent",
		steps: []step{fence(a, 10), commit(b, 1, 5), commit(a, 1, 6).stale(10)},
		want:  map[shard.ID]cp{a: {Floor: 10}, b: {Offset: 5, Token: 1, Floor: 1}}},
	// IDs that a key encoding could confuse: a prefix of another, a nested
	// path, a different case, characters that need escaping.
	{name: "shard IDs are compared exactly",
		steps: []step{
			commit("s", 1, 1), commit("s/1", 2, 2), commit("S", 3, 3),
			commit("s 1%2F?#ü", 4, 4), fence("s/", 5),
		},
		want: map[shard.ID]cp{
			"s": {Offset: 1, Token: 1, Floor: 1}, "s/1": {Offset: 2, Token: 2, Floor: 2},
			"S": {Offset: 3, Token: 3, Floor: 3}, "s 1%2F?#ü": {Offset: 4, Token: 4, Floor: 4},
			"s/": {Floor: 5}, "s/2": {},
		}},
	{name: "largest values round-trip",
		steps: []step{commit(a, math.MaxInt64, math.MaxInt64)},
		want:  map[shard.ID]cp{a: {Offset: math.MaxInt64, Token: math.MaxInt64, Floor: math.MaxInt64}}},
}

func (c script) run(t *testing.T, st offsets.Store) {
	ctx := context.Background()
	for i, s := range c.steps {
		got, err := s.do(ctx, st)
		if msg := checkErr(err, s.wantErr, s.wantMsg); msg != "" {
			t.Fatalf("step %d: %v: %s", i, s, msg)
		}
		if s.kind == "load" && err == nil && got != s.wantCP {
			t.Fatalf("step %d: %v = %+v, want %+v", i, s, got, s.wantCP)
		}
	}
	for id, want := range c.want {
		got, err := st.Load(ctx, id)
		if err != nil {
			t.Fatalf("Load(%q): %v", id, err)
		}
		if got != want {
			t.Errorf("Load(%q) = %+v, want %+v", id, got, want)
		}
	}
}

// checkErr describes how err differs from what was wanted, or returns "".
func checkErr(err, want error, msg string) string {
	switch {
	case want == nil && err != nil:
		return fmt.Sprintf("unexpected error: %v", err)
	case want == nil:
		return ""
	case err == nil:
		return fmt.Sprintf("no error, want one wrapping %v", want)
	case !errors.Is(err, want):
		return fmt.Sprintf("error %q does not wrap %v", err, want)
	case !strings.Contains(err.Error(), msg):
		return fmt.Sprintf("error %q does not say %q", err, msg)
	}
	return ""
}

func testFresh(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	first := mustOpen(t, open)
	if err := first.Commit(ctx, a, 3, 30); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	second := mustOpen(t, open)
	if got, err := second.Load(ctx, a); err != nil || got != (cp{}) {
		t.Fatalf("a second open sees %+v, %v; want an empty namespace", got, err)
	}
}

func testDoneContext(t *testing.T, st offsets.Store) {
	if err := st.Commit(context.Background(), a, 5, 100); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, s := range []step{commit(a, 6, 200), fence(a, 7), commit(b, 1, 1), load(a, cp{})} {
		if _, err := s.do(ctx, st); !errors.Is(err, context.Canceled) {
			t.Errorf("%v with a cancelled context: err = %v, want context.Canceled", s, err)
		}
	}
	for id, want := range map[shard.ID]cp{a: {Offset: 100, Token: 5, Floor: 5}, b: {}} {
		if got, err := st.Load(context.Background(), id); err != nil || got != want {
			t.Errorf("after cancelled calls Load(%q) = %+v, %v; want %+v", id, got, err, want)
		}
	}
}

func testClosed(t *testing.T, st offsets.Store) {
	if err := st.Commit(context.Background(), a, 5, 100); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, s := range []step{commit(a, 6, 200), fence(a, 7), load(a, cp{})} {
		if _, err := s.do(context.Background(), st); !errors.Is(err, offsets.ErrClosed) {
			t.Errorf("%v after Close: err = %v, want ErrClosed", s, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
}
