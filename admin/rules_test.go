package admin_test

import (
	"slices"
	"testing"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

// setRulesRule: SetRules refuses a fleet without a stored policy, rules
// that would strand shards (unless forced) and rules while a live worker
// lacks the rules step (clearing them is allowed then), writing nothing
// when it refuses; otherwise it stores the rules and keeps the rest of
// the policy.
func setRulesRule(t *testing.T, e *env) {
	ctx := t.Context()
	e.configure(4)
	e.joinIn("z1", "w1")
	e.joinIn("z2", "w2")
	pin := func(zone string) []shard.PlacementRule {
		return []shard.PlacementRule{{Shards: "*", Kind: shard.RulePin, Labels: map[string]string{"zone": zone}}}
	}
	before := e.snapshot().Index
	_, err := e.op.SetRules(ctx, pin("z1"), false)
	refused(t, "SetRules with no stored policy", err, admin.ErrNoPolicy, "shardctl balance -by count")
	e.unchanged(before, "a refused SetRules")

	if _, err := e.coord.Fleet().SetPolicy(ctx, shard.BalancePolicy{MaxMovesInFlight: 3}, false); err != nil {
		t.Fatal(err)
	}
	before = e.snapshot().Index
	c, err := e.op.SetRules(ctx, pin("z9"), false)
	refused(t, "SetRules pinning every shard to a zone nobody is in", err, admin.ErrWouldStrand, "4 shards (first stream/shard-000)")
	e.unchanged(before, "a refused SetRules")
	if len(c.Unplaceable) != 4 {
		t.Errorf("the refusal's change says %d unplaceable, want 4", len(c.Unplaceable))
	}

	typo := []shard.PlacementRule{{Shards: "stream/shrd-*", Kind: shard.RuleAvoid, Labels: map[string]string{"zone": "z1"}}}
	before = e.snapshot().Index
	_, err = e.op.SetRules(ctx, typo, false)
	refused(t, "SetRules with a rule about no shard", err, admin.ErrMatchesNothing, `"avoid stream/shrd-* zone=z1" is about no shard`)
	e.unchanged(before, "a refused SetRules")

	one := func(id string) []shard.PlacementRule {
		return []shard.PlacementRule{{Shards: id, Kind: shard.RulePin, Labels: map[string]string{"zone": "z9"}}}
	}
	if _, err := e.op.SetRules(ctx, one("stream/shard-000"), true); err != nil {
		t.Fatalf("a stranding rule with force: %v", err)
	}
	_, err = e.op.SetRules(ctx, one("stream/shard-001"), false)
	refused(t, "SetRules stranding another shard than the one stranded now", err, admin.ErrWouldStrand, "1 shards (first stream/shard-001)")

	if _, err := e.op.SetRules(ctx, pin("z1"), false); err != nil {
		t.Fatal(err)
	}
	p := e.snapshot().Policy
	if p == nil || p.MaxMovesInFlight != 3 || !slices.EqualFunc(p.Rules, pin("z1"), shard.PlacementRule.Equal) {
		t.Fatalf("stored policy %v, want the rule and the moves kept", p)
	}

	sid := e.join("w-old")
	if err := e.coord.Members().Join(ctx, sid, shard.Member{ID: "w-old", Weight: 1, Version: "0.1.0",
		Steps: []string{shard.StepGenerations, shard.StepHistory, shard.StepZones}}); err != nil {
		t.Fatal(err)
	}
	before = e.snapshot().Index
	_, err = e.op.SetRules(ctx, pin("z2"), false)
	refused(t, "SetRules beside a worker without the rules step", err, admin.ErrStepMissing, "w-old (0.1.0)")
	e.unchanged(before, "a refused SetRules")
	if _, err := e.op.SetRules(ctx, nil, false); err != nil {
		t.Fatalf("clearing the rules beside an old worker: %v", err)
	}
	if p := e.snapshot().Policy; p == nil || len(p.Rules) != 0 {
		t.Fatalf("stored policy %v, want no rules", p)
	}
}
