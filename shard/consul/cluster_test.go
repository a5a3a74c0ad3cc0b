package consul_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestLeaderChange: on a three-server cluster, killing the Raft leader
// costs calls made during the election an ErrUnavailable (never a loss):
// sessions survive, owners keep their shards, and tokens handed out after
// the election are above every earlier one.
func TestLeaderChange(t *testing.T) {
	cl := consultest.StartCluster(t, 3)
	leader := cl.Leader(t)
	var follower *consultest.Agent // sessions live on the node they are created on: not the one we kill
	for _, a := range cl.Agents {
		if a != leader {
			follower = a
			break
		}
	}
	c := newCoordinator(t, follower, func(cfg *consul.Config) { cfg.RequestTimeout = 3 * time.Second })
	ctx := t.Context()
	fleet, err := c.Fleet().Configure(ctx, shard.Config{Shards: 32})
	if err != nil {
		t.Fatal(err)
	}
	ids := fleet.IDs()
	a := newSession(t, c, "w-a", 5*time.Second, 0)
	b := newSession(t, c, "w-b", 5*time.Second, 0)
	before := acquire(t, c, a, ids[:16]...)
	for id, tok := range acquire(t, c, b, ids[16:]...) {
		before[id] = tok
	}
	if len(before) != 32 {
		t.Fatalf("owned %d shards before the kill, want 32", len(before))
	}

	killed := cl.KillChosenLeader(t, leader)
	start := time.Now()
	// Renew through the election as a worker would: transient failures
	// only, until calls succeed again.
	var unavailable int
	for {
		errA, errB := c.Sessions().Renew(ctx, a), c.Sessions().Renew(ctx, b)
		if errA == nil && errB == nil {
			break
		}
		for _, err := range []error{errA, errB} {
			if err != nil && !errors.Is(err, shard.ErrUnavailable) {
				t.Fatalf("renewal during the election = %v, want ErrUnavailable", err)
			}
		}
		unavailable++
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no successful renewal 30 s after killing the leader: %v, %v", errA, errB)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("renewals succeed again %v after killing %s (%d rounds unavailable)", time.Since(start).Round(time.Millisecond), killed.Name, unavailable)

	// A new leader answers default-mode reads from its state before it has
	// applied every entry the old one committed, so the first snapshots may
	// lack the last writes acknowledged before the kill; their index then
	// is below those writes' tokens (the worker trusts a snapshot about a
	// claim only from the claim's token on). Wait for the index to get
	// there, as a watcher would.
	var newest shard.Token
	for _, tok := range before {
		newest = max(newest, tok)
	}
	snap := snapshot(t, c)
	for caughtUp, behind := time.Now().Add(10*time.Second), 0; snap.Index < uint64(newest); snap = snapshot(t, c) {
		if time.Now().After(caughtUp) {
			t.Fatalf("watch index %d still below the last token %d acknowledged before the kill, 10 s after renewals resumed", snap.Index, newest)
		}
		behind++
		t.Logf("snapshot %d after the election is behind: index %d < last token %d", behind, snap.Index, newest)
		time.Sleep(100 * time.Millisecond)
	}
	for _, id := range ids {
		st, _ := snap.Shard(id)
		want := a
		if id >= ids[16] {
			want = b
		}
		if st.Session != want || st.Token != before[id] {
			t.Errorf("%s after the election = %+v, want still %s's at %d", id, st, want, before[id])
		}
	}

	// Hand everything over: tokens keep growing across the leader change.
	if err := c.Locks().Release(ctx, a, shard.ShardLocks(ids[:16]), shard.ReasonDrain); err != nil {
		t.Fatal(err)
	}
	after := acquire(t, c, b, ids[:16]...)
	for _, id := range ids[:16] {
		if after[id] <= before[id] {
			t.Errorf("%s: token %d after the leader change, not above %d", id, after[id], before[id])
		}
	}

	killed.Restart(t)
	cl.WaitReady(t, 60*time.Second)
	if err := c.Sessions().Renew(ctx, b); err != nil {
		t.Fatal(fmt.Errorf("after the old leader rejoined: %w", err))
	}
}
