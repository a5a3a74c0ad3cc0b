package admin_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
)

// recoverRule: Recover writes nothing while the store's floors are within
// the coordinator's history (unless forced), refuses while a live worker
// lacks the generations step, and when floors are above the history
// (10^6, as a month-old fleet leaves them, on a coordinator whose index is
// in the tens) raises the generation above every generation in the store,
// after which a new claim's fence is accepted where it was refused.
func recoverRule(t *testing.T, e *env) {
	ctx := t.Context()
	ids := e.configure(4)
	store := offmem.New()
	t.Cleanup(func() { _ = store.Close() })
	e.join("w1", ids[:2]...)
	for _, st := range e.snapshot().Shards {
		if err := store.Fence(ctx, st.Shard, st.Token); err != nil {
			t.Fatal(err)
		}
	}

	before := e.snapshot().Index
	r, err := e.op.Recover(ctx, store, false)
	if err != nil || r.Raised || len(r.Behind) != 0 || r.From != 0 || r.Config.Generation != 0 {
		t.Fatalf("Recover with floors within the history = %+v, %v; want nothing behind, nothing raised", r, err)
	}
	e.unchanged(before, "a recovery with nothing behind")

	for i, id := range ids[1:] {
		if err := store.Fence(ctx, id, shard.Token(1_000_000+i)); err != nil {
			t.Fatal(err)
		}
	}
	e.release("w1", ids[1])
	e.acquire("w1", ids[1])
	claim := e.tokenOf(ids[1])
	if err := store.Fence(ctx, ids[1], claim); !errors.Is(err, offsets.ErrStaleToken) {
		t.Fatalf("fence of %s at %d under a floor of 10^6 = %v, want ErrStaleToken", ids[1], claim, err)
	}

	sid := e.join("w-old")
	if err := e.coord.Members().Join(ctx, sid, shard.Member{ID: "w-old", Weight: 1, Version: "0.1.0"}); err != nil {
		t.Fatal(err)
	}
	before = e.snapshot().Index
	_, err = e.op.Recover(ctx, store, true)
	refused(t, "Recover beside a 0.1.0 worker", err, admin.ErrStepMissing, "w-old (0.1.0)")
	e.unchanged(before, "a refused recovery")
	e.stop("w-old")

	hi, err := shard.MakeToken(3, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Fence(ctx, ids[3], hi); err != nil {
		t.Fatal(err)
	}
	r, err = e.op.Recover(ctx, store, false)
	if err != nil || !r.Raised || r.From != 0 || r.Config.Generation != 4 || r.Highest != hi {
		t.Fatalf("Recover with floors above the history = %+v, %v; want generation 0 → 4 (above the store's 3), highest %d", r, err, hi)
	}
	if !slices.Equal(r.Behind, ids[1:]) {
		t.Errorf("behind = %v, want %v", r.Behind, ids[1:])
	}
	if g := e.snapshot().Config.Generation; g != 4 {
		t.Errorf("the fleet's generation after the recovery = %d, want 4", g)
	}

	e.release("w1", ids[1])
	e.acquire("w1", ids[1])
	claim = e.tokenOf(ids[1])
	if err := store.Fence(ctx, ids[1], claim); err != nil || claim.Generation() != 4 {
		t.Fatalf("fence of %s at %d (generation %d) after the recovery = %v, want accepted in generation 4", ids[1], claim, claim.Generation(), err)
	}
}

// tokenOf is the token of the shard's holder in a fresh listing.
func (e *env) tokenOf(id shard.ID) shard.Token {
	e.t.Helper()
	for _, st := range e.snapshot().Shards {
		if st.Shard == id && st.Held() {
			return st.Token
		}
	}
	e.t.Fatalf("%s is not held", id)
	return 0
}

// TestRecovered: a fleet is recovered once every shard is held and those
// that were behind are held at or above the floor they had (in the new
// generation, or past it in the old); a shard that was not behind may
// stay in its own.
func TestRecovered(t *testing.T) {
	g0, _ := shard.MakeToken(0, 40)
	past, _ := shard.MakeToken(0, 80)
	g1, _ := shard.MakeToken(1, 50)
	r := admin.Recovery{Config: shard.Config{Shards: 2, Generation: 1}, Behind: []shard.ID{"s-1"}, Floors: map[shard.ID]shard.Token{"s-1": 60}}
	for _, tc := range []struct {
		name   string
		shards []shard.ShardState
		want   bool
	}{
		{"the one behind in the new generation", []shard.ShardState{{Shard: "s-0", Session: "a", Token: g0}, {Shard: "s-1", Session: "b", Token: g1}}, true},
		{"the one behind taken past its floor in the old", []shard.ShardState{{Shard: "s-0", Session: "a", Token: g0}, {Shard: "s-1", Session: "b", Token: past}}, true},
		{"the one behind still below its floor", []shard.ShardState{{Shard: "s-0", Session: "a", Token: g0}, {Shard: "s-1", Session: "b", Token: g0}}, false},
		{"one free", []shard.ShardState{{Shard: "s-0", Token: g0}, {Shard: "s-1", Session: "b", Token: g1}}, false},
	} {
		if got := admin.Recovered(shard.Snapshot{Shards: tc.shards}, r); got != tc.want {
			t.Errorf("%s: Recovered = %v, want %v", tc.name, got, tc.want)
		}
	}
}
