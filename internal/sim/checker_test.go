package sim

import (
	"context"
	"strings"
	"testing"

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
	a := newAuditor(&careless{cps: map[shard.ID]offsets.Checkpoint{}}, c)
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
	a.started(shard.Claim{Shard: s, Token: 7}, offsets.Checkpoint{Offset: 4, Token: 3, Floor: 7})
	must(a.Commit(ctx, s, 7, 12))
	must(a.Commit(ctx, s, 3, 11)) // the old owner wakes up
	a.final(ctx)
	got := strings.Join(c.list(), "\n")
	for _, want := range []string{"lost commit", "stale commit accepted", "offset went backwards", "stale write accepted"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q among the violations:\n%s", want, got)
		}
	}
}
