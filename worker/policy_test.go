package worker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestBalancePolicyFollowedLive: the fleet's stored policy is the one the
// assignor follows, changed under a running fleet with no restart. Two
// workers started for count balance over six shards (one hot) hold three
// each; an operator stores a load-balancing policy and the hot shard's
// worker ends with it alone; the operator stores count balance again and
// the fleet returns to three each, its loads keys emptied (figures left
// there would be shown as current).
func TestBalancePolicyFollowedLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 6)
		f.start("a", hotShard)
		f.start("b", hotShard)
		settle(time.Minute)
		if c := counts(f.owners()); c["a"] != 3 || c["b"] != 3 {
			t.Fatalf("count balance before any policy is stored: %v, want 3 each", c)
		}
		if p := f.snapshot().Policy; p != nil {
			t.Fatalf("workers left at the defaults stored a policy %v; want none", p)
		}

		if _, err := f.coord.Fleet().SetPolicy(t.Context(), shard.BalancePolicy{Load: &shard.LoadBalance{}}, false); err != nil {
			t.Fatal(err)
		}
		settle(5 * time.Minute)
		owners := f.owners()
		if hot := owners["stream/shard-000"]; counts(owners)[hot] != 1 {
			t.Fatalf("after the fleet's policy turned to load: %v, want the hot shard's worker %s holding it alone", owners, hot)
		}

		if _, err := f.coord.Fleet().SetPolicy(t.Context(), shard.BalancePolicy{}, false); err != nil {
			t.Fatal(err)
		}
		settle(5 * time.Minute)
		if c := counts(f.owners()); c["a"] != 3 || c["b"] != 3 {
			t.Fatalf("after the fleet's policy turned back to counts: %v, want 3 each", c)
		}
		if l := f.snapshot().ShardLoads(); len(l) != 0 {
			t.Fatalf("loads still carried after the fleet turned back to counts: %v, want the loads keys emptied", l)
		}
	})
}

// TestWorkerProposesItsPolicy: a worker configured away from the defaults
// stores its policy for a fleet that has none, and a later worker with
// another configuration does not overwrite it: the first one stored is the
// fleet's until an operator changes it.
func TestWorkerProposesItsPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 6)
		cfg := f.config("a", f.events.waiting("a"))
		cfg.MaxMovesInFlight = 2
		cfg.LoadBalance = &shard.LoadBalance{Tolerance: 0.2}
		f.startWith(cfg)
		settle(10 * time.Second)
		want := shard.BalancePolicy{MaxMovesInFlight: 2, Load: &shard.LoadBalance{Tolerance: 0.2}}
		if p := f.snapshot().Policy; p == nil || !p.Equal(want) {
			t.Fatalf("the fleet's policy after a's start: %v, want %v", p, want)
		}

		cfg = f.config("b", f.events.waiting("b"))
		cfg.MaxMovesInFlight = 5
		f.startWith(cfg)
		settle(10 * time.Second)
		if p := f.snapshot().Policy; p == nil || !p.Equal(want) {
			t.Fatalf("the fleet's policy after b's start: %v, want a's %v kept", p, want)
		}
	})
}
