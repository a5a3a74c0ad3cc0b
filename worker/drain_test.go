package worker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestOperatorDrainIsHonouredAndSurvivesARejoin: an operator sets Draining
// on a live worker's member key (as shardctl drain does, rewriting the key
// under the worker's own session). The worker hands off every shard with
// the reason "drain", and keeps the flag when it rejoins after losing its
// session, instead of rewriting its member key as not draining.
func TestOperatorDrainIsHonouredAndSurvivesARejoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		f := newFleet(t, 24)
		for _, id := range []string{"a", "b", "c"} {
			f.start(id, nil)
		}
		settle(30 * time.Second)
		if c := counts(f.owners()); c["a"] == 0 {
			t.Fatalf("before the drain a owns nothing: %v", c)
		}

		member := func() shard.MemberState {
			for _, m := range f.snapshot().Members {
				if m.ID == "a" {
					return m
				}
			}
			t.Fatal("no member key for a")
			return shard.MemberState{}
		}
		held := map[shard.ID]bool{} // a's shards when the drain is set
		for id, w := range f.owners() {
			if w == "a" {
				held[id] = true
			}
		}
		m := member()
		drained := m.Member
		drained.Draining = true
		if err := f.coord.Members().Join(ctx, m.Session, drained); err != nil {
			t.Fatalf("setting Draining on a's member key: %v", err)
		}
		settle(30 * time.Second)
		if c := counts(f.owners()); c["a"] != 0 || c["b"]+c["c"] != 24 {
			t.Fatalf("after the drain: counts %v, want a with none and b, c with all 24", c)
		}
		for _, st := range f.snapshot().Shards {
			if held[st.Shard] && st.Owner.Reason != "rebalanced from a (drain)" {
				t.Errorf("%s: moved off a with reason %q, want the hand-off to say drain", st.Shard, st.Owner.Reason)
			}
		}

		// The worker loses its session (as after a pause past the TTL) and
		// rejoins with a new one: the operator's request must stay.
		if err := f.coord.Sessions().Destroy(ctx, m.Session); err != nil {
			t.Fatal(err)
		}
		settle(30 * time.Second)
		again := member()
		if !again.Live() || again.Session == m.Session {
			t.Fatalf("a did not rejoin with a new session: %+v", again)
		}
		if !again.Draining {
			t.Fatalf("a rejoined and cleared the operator's drain: %+v", again.Member)
		}
		if c := counts(f.owners()); c["a"] != 0 {
			t.Fatalf("a took shards again after its rejoin: %v", c)
		}

		// Withdrawing the drain gives a its share back.
		undrained := again.Member
		undrained.Draining = false
		if err := f.coord.Members().Join(ctx, again.Session, undrained); err != nil {
			t.Fatal(err)
		}
		settle(30 * time.Second)
		if c := counts(f.owners()); c["a"] < 7 || spread(c) > 1 {
			t.Fatalf("after withdrawing the drain: counts %v, want a back within one of the others", c)
		}
	})
}
