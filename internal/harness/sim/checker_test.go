package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// careless is an offset store without a fence: it accepts everything.
type careless struct {
	cps map[shard.ID]offsets.Checkpoint
}

func (c *careless) Fence(_ context.Context, s shard.ID, t shard.Token) error {
	cp := c.cps[s]
	cp.Floor = t
	c.cps[s] = cp
	return nil
}

func (c *careless) Commit(_ context.Context, s shard.ID, t shard.Token, o int64) error {
	c.cps[s] = offsets.Checkpoint{Offset: o, Token: t, Floor: t}
	return nil
}

func (c *careless) Load(_ context.Context, s shard.ID) (offsets.Checkpoint, error) {
	return c.cps[s], nil
}

func (c *careless) Close() error { return nil }

// TestAuditorCatchesAStoreWithoutAFence: the checkers must see what they
// exist to see. A store that accepts a paused owner's late commit, after a
// newer owner fenced and committed, breaks three invariants at once.
func TestAuditorCatchesAStoreWithoutAFence(t *testing.T) {
	c := &checker{}
	a := newAuditor(&careless{cps: map[shard.ID]offsets.Checkpoint{}}, c, nil)
	ctx := context.Background()
	const s = shard.ID("stream/shard-000")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Fence(ctx, s, 3))
	must(a.Commit(ctx, s, 3, 10))
	must(a.Fence(ctx, s, 7)) // a new owner takes over
	a.Started(shard.Claim{Shard: s, Token: 7}, offsets.Checkpoint{Offset: 4, Token: 3, Floor: 7})
	must(a.Commit(ctx, s, 7, 12))
	must(a.Commit(ctx, s, 3, 11)) // the old owner wakes up
	checkHistory(ctx, a, c)
	got := strings.Join(c.list(), "\n")
	for _, want := range []string{"lost commit", "stale commit accepted", "offset went backwards", "stale write accepted"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q among the violations:\n%s", want, got)
		}
	}
}

// yesman is a coordinator that grants whatever epoch it is told to and
// accepts every Assign: no check on P/assignor at all.
type yesman struct {
	shard.Coordinator
	next shard.Token
}

func (y *yesman) Locks() shard.Locks             { return yesLocks{y} }
func (y *yesman) Assignments() shard.Assignments { return yesAssignments{} }

type yesLocks struct {
	*yesman
}

func (l yesLocks) Acquire(_ context.Context, _ shard.SessionID, want []shard.Acquisition) ([]shard.Grant, error) {
	return []shard.Grant{{Lock: want[0].Lock, Token: l.next}}, nil
}

func (yesLocks) Release(context.Context, shard.SessionID, []shard.Lock, shard.Reason) error {
	return nil
}

func (yesLocks) Watch(context.Context, shard.Lock, uint64) (shard.LockKey, error) {
	return shard.LockKey{}, nil
}

type yesAssignments struct{ shard.Assignments }

func (yesAssignments) Assign(context.Context, shard.SessionID, shard.Token, map[string]*shard.Assignment) error {
	return nil
}

// TestElectionsCatchACoordinatorWithoutTheAssignorCheck: each write the
// coordinator must refuse, and each epoch it must not hand out, is reported.
func TestElectionsCatchACoordinatorWithoutTheAssignorCheck(t *testing.T) {
	c := &checker{}
	el := newElections(c, time.Second)
	y := &yesman{}
	e := shard.Intercept(y, el.intercept("w1"))
	ctx := context.Background()
	set := map[string]*shard.Assignment{"w1": {}}
	campaign := func(id shard.SessionID, epoch shard.Token) {
		y.next = epoch
		_, _, _ = shard.TryLock(ctx, e.Locks(), id, shard.AssignorLock)
	}
	campaign("s1", 5)
	_ = e.Assignments().Assign(ctx, "s1", 5, set) // fine: s1 holds epoch 5
	campaign("s2", 9)
	_ = e.Assignments().Assign(ctx, "s1", 5, set) // deposed
	_ = e.Assignments().Assign(ctx, "s3", 9, set) // never won
	el.destroy("s2")
	_ = e.Assignments().Assign(ctx, "s2", 9, set) // destroyed
	el.held("w2", "s2", 9, 2*time.Second, nil)
	campaign("s4", 9) // an epoch handed out twice
	campaign("s5", 7) // a new epoch below one won before
	want := []string{"after epoch 9 was won", `won by "s2"`, "destroyed before it was sent", "accepted its Assign at epoch 9",
		"returned to session s4", "not above epoch 9"}
	got := c.list()
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("violation %d: %q, want it to say %q", i, got[i], w)
		}
	}
}
