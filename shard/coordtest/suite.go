package coordtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Run runs every case against coordinators made by open. open must return a
// coordinator on a fresh, empty fleet namespace each time it is called, and
// may be called concurrently (the cases run in parallel). It should register
// its own cleanup with t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) shard.Coordinator, opts ...Option) {
	o := newOptions(opts)
	if o.operator == nil {
		t.Fatal("coordtest: WithOperator is required (the cases that edit keys from under the coordinator need it)")
	}
	s := &suite{open: open, o: o}
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"AcquireRelease", s.acquireRelease},
		{"ReacquireHeldKeepsTokenWithoutWrite", s.reacquireHeld},
		{"TokensIncreaseAcrossOwnersAndDeletes", s.tokensIncrease},
		{"DestroyReleasesEverything", s.destroyReleases},
		{"ExpiryAndLockDelay", s.expiryAndLockDelay},
		{"NoLockDelayAfterRelease", s.noLockDelayAfterRelease},
		{"DestroyAppliesLockDelay", s.destroyAppliesLockDelay},
		{"WatchIndex", s.watchIndex},
		{"WatchMember", s.watchMember},
		{"BatchLargerThanOneTransaction", s.batch},
		{"Configure", s.configure},
		{"Join", s.join},
		{"ArgumentErrors", s.argumentErrors},
		{"GoneSession", s.goneSession},
		{"CanceledContext", s.canceledContext},
		{"ConcurrentAcquirers", s.concurrent},
		{"AssignorCampaign", s.campaign},
		{"AssignorDiesWithSession", s.assignorDiesWithSession},
		{"AssignFencedByAssignor", s.assignFenced},
		{"AssignManyBatches", s.assignBatches},
		{"WatchAssignment", s.watchAssignment},
		{"SnapshotAssignorAndAssignments", s.snapshotAssign},
		{"MalformedAssignment", s.malformedAssignment},
		{"AssignmentEditedByHand", s.assignmentEdited},
		{"ConfigureProtocol", s.configureProtocol},
		{"Generation", s.generation},
		{"Layouts", s.layouts},
		{"Freeze", s.freeze},
		{"Policy", s.policy},
		{"MemberMarks", s.memberMarks},
		{"ReportLoad", s.reportLoad},
		{"ReportLoadRefused", s.reportLoadRefused},
		{"DeadWorkerLoads", s.deadWorkerLoads},
		{"ReportLoadSize", s.reportLoadSize},
		{"ReportStandby", s.reportStandby},
		{"History", s.history},
		{"MemberZone", s.memberZone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

type suite struct {
	open func(t *testing.T) shard.Coordinator
	o    options
}

// long is the TTL of sessions that must not expire during a case; within
// Consul's session TTL range.
const long = time.Hour

// session opens a session and destroys it when the test ends (so that a
// Consul agent is not left with its health check).
func session(t *testing.T, c shard.Coordinator, worker string, ttl, lockDelay time.Duration) shard.SessionID {
	t.Helper()
	id, err := c.Sessions().Create(t.Context(), shard.SessionSpec{Worker: worker, TTL: ttl, LockDelay: lockDelay})
	if err != nil {
		t.Fatalf("CreateSession(%s, ttl %v, lock-delay %v): %v", worker, ttl, lockDelay, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Sessions().Destroy(ctx, id)
	})
	return id
}

// acquire asks for shards (reason "test") and returns the tokens granted.
func acquire(t *testing.T, c shard.Coordinator, sid shard.SessionID, ids ...shard.ID) map[shard.ID]shard.Token {
	t.Helper()
	grants, err := c.Locks().Acquire(t.Context(), sid, wantOf(ids...))
	if err != nil {
		t.Fatalf("Acquire(%s, %v): %v", sid, ids, err)
	}
	got := make(map[shard.ID]shard.Token, len(grants))
	for _, cl := range shard.Claims(grants) {
		got[cl.Shard] = cl.Token
	}
	return got
}

func wantOf(ids ...shard.ID) []shard.Acquisition {
	want := make([]shard.Acquisition, len(ids))
	for i, id := range ids {
		want[i] = shard.AcquireShard(id, shard.Why{Reason: shard.ReasonInitial})
	}
	return want
}

func release(t *testing.T, c shard.Coordinator, sid shard.SessionID, why shard.Reason, ids ...shard.ID) {
	t.Helper()
	if err := c.Locks().Release(t.Context(), sid, shard.ShardLocks(ids), why); err != nil {
		t.Fatalf("Release(%s, %v): %v", sid, ids, err)
	}
}

func destroy(t *testing.T, c shard.Coordinator, sid shard.SessionID) {
	t.Helper()
	if err := c.Sessions().Destroy(t.Context(), sid); err != nil {
		t.Fatalf("DestroySession(%s): %v", sid, err)
	}
}

func join(t *testing.T, c shard.Coordinator, sid shard.SessionID, m shard.Member) {
	t.Helper()
	if err := c.Members().Join(t.Context(), sid, m); err != nil {
		t.Fatalf("Join(%s, %s): %v", sid, m.ID, err)
	}
}

func configure(t *testing.T, c shard.Coordinator, n int) shard.Config {
	t.Helper()
	cfg, err := c.Fleet().Configure(t.Context(), shard.Config{Shards: n})
	if err != nil {
		t.Fatalf("Configure(%d shards): %v", n, err)
	}
	return cfg
}

// snapshot returns the current snapshot without blocking.
func snapshot(t *testing.T, c shard.Coordinator) shard.Snapshot {
	t.Helper()
	snap, err := c.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatalf("Watch(0): %v", err)
	}
	return snap
}

func holder(t *testing.T, c shard.Coordinator, id shard.ID) shard.SessionID {
	t.Helper()
	s, _ := snapshot(t, c).Shard(id)
	return s.Session
}

// waitFor watches until cond holds for a snapshot, or fails the test after
// within. It returns the first snapshot that satisfies cond.
func waitFor(t *testing.T, c shard.Coordinator, within time.Duration, what string, cond func(shard.Snapshot) bool) shard.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	var (
		idx  uint64
		last shard.Snapshot
	)
	for {
		snap, err := c.Fleet().Watch(ctx, idx)
		if err != nil {
			t.Fatalf("waiting up to %v for %s: %v; last snapshot %s", within, what, err, describe(last))
		}
		if cond(snap) {
			return snap
		}
		last = snap
		idx = shard.NextIndex(idx, snap.Index)
	}
}

// noWrite fails the test if the fleet's index moves within d: the calls
// just made must not have written anything.
func noWrite(t *testing.T, c shard.Coordinator, index uint64, d time.Duration, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	snap, err := c.Fleet().Watch(ctx, index)
	if err == nil {
		t.Fatalf("%s wrote: index moved from %d to %d", what, index, snap.Index)
	}
}

// describe summarizes a snapshot for failure messages.
func describe(s shard.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "index %d:", s.Index)
	for _, m := range s.Members {
		fmt.Fprintf(&b, " member %s(session %q)", m.ID, m.Session)
	}
	for _, st := range s.Shards {
		fmt.Fprintf(&b, " %s@%d(session %q)", st.Shard, st.Token, st.Session)
	}
	return b.String()
}
