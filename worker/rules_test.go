package worker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestPlacementRulesFollowedLive: rules stored in the fleet's policy move
// shards under a running fleet. Pinned to a label only worker b has, the
// first four shards end on b; pinned to a label nobody has, they end
// unowned (released by b, placed nowhere); rules removed, the fleet is
// balanced again.
func TestPlacementRulesFollowedLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		f.start("a", nil)
		cfg := f.config("b", f.events.waiting("b"))
		cfg.Labels = map[string]string{"disk": "ssd"}
		f.startWith(cfg)
		settle(time.Minute)
		if c := counts(f.owners()); c["a"] != 4 || c["b"] != 4 {
			t.Fatalf("before any rule: %v, want 4 each", c)
		}
		setRules := func(rules ...string) {
			t.Helper()
			p := shard.BalancePolicy{}
			for _, s := range rules {
				r, err := shard.ParseRule(s)
				if err != nil {
					t.Fatal(err)
				}
				p.Rules = append(p.Rules, r)
			}
			if _, err := f.coord.Fleet().SetPolicy(t.Context(), p, false); err != nil {
				t.Fatal(err)
			}
			settle(time.Minute)
		}

		setRules("pin stream/shard-00* disk=ssd") // 000 … 007: all eight
		if c := counts(f.owners()); c["b"] != 8 {
			t.Fatalf("every shard pinned to disk=ssd: %v, want all 8 on b", c)
		}
		setRules("pin stream/shard-00* disk=nvme")
		if owners := f.owners(); len(owners) != 0 {
			t.Fatalf("pinned to a label no worker has: owners %v, want none (unowned, not placed elsewhere)", owners)
		}
		setRules("avoid stream/shard-000 disk=ssd")
		owners := f.owners()
		if c := counts(owners); c["a"] != 4 || c["b"] != 4 || owners["stream/shard-000"] != "a" {
			t.Fatalf("after the pin was replaced by an avoid: %v, want 4 each and shard 000 on a", owners)
		}
	})
}
