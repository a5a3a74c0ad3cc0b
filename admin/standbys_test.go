package admin_test

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

// setStandbysRule: SetStandbys refuses a fleet without a stored policy,
// K out of range, and standbys while a live worker lacks the standbys
// step (clearing them is allowed then), writing nothing when it refuses;
// otherwise it stores them and keeps the rest of the policy.
func setStandbysRule(t *testing.T, e *env) {
	ctx := t.Context()
	e.configure(4)
	e.joinIn("z1", "w1")
	before := e.snapshot().Index
	_, err := e.op.SetStandbys(ctx, 1, 0)
	refused(t, "SetStandbys with no stored policy", err, admin.ErrNoPolicy, "shardctl balance -by count")
	e.unchanged(before, "a refused SetStandbys")

	if _, err := e.coord.Fleet().SetPolicy(ctx, shard.BalancePolicy{MaxMovesInFlight: 3}, false); err != nil {
		t.Fatal(err)
	}
	before = e.snapshot().Index
	_, err = e.op.SetStandbys(ctx, 4, 0)
	refused(t, "SetStandbys of 4", err, shard.ErrInvalidArgument, "standbys 4")
	e.unchanged(before, "a refused SetStandbys")

	if _, err := e.op.SetStandbys(ctx, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if p := e.snapshot().Policy; p == nil || p.Standbys != 2 || p.PrepareTimeout != 30*time.Second || p.MaxMovesInFlight != 3 {
		t.Fatalf("stored policy %v, want 2 standbys, a 30 s prepare timeout and the moves kept", p)
	}

	sid := e.join("w-old")
	if err := e.coord.Members().Join(ctx, sid, shard.Member{ID: "w-old", Weight: 1, Version: "0.1.0",
		Steps: []string{shard.StepGenerations, shard.StepHistory, shard.StepZones, shard.StepRules}}); err != nil {
		t.Fatal(err)
	}
	before = e.snapshot().Index
	_, err = e.op.SetStandbys(ctx, 1, 0)
	refused(t, "SetStandbys beside a worker without the standbys step", err, admin.ErrStepMissing, "w-old (0.1.0)")
	e.unchanged(before, "a refused SetStandbys")
	if _, err := e.op.SetStandbys(ctx, 0, 0); err != nil {
		t.Fatalf("clearing the standbys beside an old worker: %v", err)
	}
	if p := e.snapshot().Policy; p == nil || p.Standbys != 0 || p.PrepareTimeout != 0 {
		t.Fatalf("stored policy %v, want no standbys and no prepare timeout", p)
	}
}
