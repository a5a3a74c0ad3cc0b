package rebalance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

func rule(s string) shard.PlacementRule {
	r, err := shard.ParseRule(s)
	if err != nil {
		panic(err)
	}
	return r
}

// zonedFleet is a settled fleet of members m0..m(w-1), member k in zone
// "z<k mod zones>", n shards.
func zonedFleet(t *testing.T, w, zones, n int, rules ...string) *fleet {
	t.Helper()
	f := newFleet(rand.New(rand.NewPCG(seed, 7)), 0, n)
	for k := range w {
		f.join(Member{ID: fmt.Sprintf("m%d", k), Zone: fmt.Sprintf("z%d", k%zones)})
	}
	for _, s := range rules {
		f.s.Rules = append(f.s.Rules, rule(s))
	}
	if _, _, err := f.settle(Policy{}, time.Second, 100, checkRuleKeys); err != nil {
		t.Fatal(err)
	}
	return f
}

// checkRuleKeys fails a decision that lists a free shard in the key of a
// member the rules do not allow to own it: a hard rule broken by a
// placement. (A held shard may stay in its holder's key while its
// hand-off waits for the move budget.)
func checkRuleKeys(s State, d Decision) error {
	byID := map[string]Member{}
	for _, m := range s.Members {
		byID[m.ID] = m
	}
	holder := map[shard.ID]string{}
	for i, h := range s.Holders {
		holder[s.Shards[i]] = h
	}
	for w, a := range d.Assign {
		m := byID[w]
		for _, id := range a.Shards {
			if holder[id] != w && !shard.Allows(s.Rules, id, m.Zone, m.Labels) {
				return fmt.Errorf("%s is placed on %s (zone %q, labels %v), which the rules exclude", id, w, m.Zone, m.Labels)
			}
		}
		for _, id := range d.Unplaceable {
			if slices.Contains(a.Shards, id) && holder[id] != w {
				return fmt.Errorf("%s is unplaceable and yet placed on %s", id, w)
			}
		}
	}
	return nil
}

func heldBy(f *fleet) map[string][]shard.ID {
	out := map[string][]shard.ID{}
	for i, h := range f.s.Holders {
		out[h] = append(out[h], f.s.Shards[i])
	}
	return out
}

func TestPinKeepsShardsInTheirZone(t *testing.T) {
	f := zonedFleet(t, 6, 3, 60, "pin stream/shard-00* zone=z1")
	for i, h := range f.s.Holders {
		id := f.s.Shards[i]
		if id < "stream/shard-010" && h != "m1" && h != "m4" {
			t.Errorf("%s is held by %s, outside zone z1", id, h)
		}
	}
	for h, ids := range heldBy(f) {
		if len(ids) != 10 {
			t.Errorf("%s holds %d shards, want 10 (60 over 6, the pins counted in)", h, len(ids))
		}
	}
}

func TestAvoidAndPreferLive(t *testing.T) {
	f := zonedFleet(t, 4, 2, 40)
	f.s.Rules = []shard.PlacementRule{rule("avoid stream/shard-01* zone=z0"), rule("prefer stream/shard-02* zone=z0")}
	if _, _, err := f.settle(Policy{}, time.Second, 100, checkRuleKeys); err != nil {
		t.Fatal(err)
	}
	for i, h := range f.s.Holders {
		id := string(f.s.Shards[i])
		if id >= "stream/shard-010" && id < "stream/shard-020" && (h == "m0" || h == "m2") {
			t.Errorf("%s is held by %s in zone z0, which its avoid rule excludes", id, h)
		}
	}
	for h, ids := range heldBy(f) {
		if len(ids) != 10 {
			t.Errorf("%s holds %d shards, want 10", h, len(ids))
		}
	}
}

func TestPreferPlacesFreeShards(t *testing.T) {
	f := zonedFleet(t, 4, 2, 40, "prefer stream/shard-00* zone=z1")
	for i, h := range f.s.Holders {
		if id := f.s.Shards[i]; id < "stream/shard-010" && h != "m1" && h != "m3" {
			t.Errorf("%s went to %s: the zone it prefers had room", id, h)
		}
	}
}

// TestUnsatisfiablePinIsReleasedAndReported: a pin no live member
// satisfies leaves its shards in no key, releases them from their
// holders, reports them, and places them once a member that may take them
// joins.
func TestUnsatisfiablePinIsReleasedAndReported(t *testing.T) {
	f := zonedFleet(t, 4, 2, 40)
	f.s.Rules = []shard.PlacementRule{rule("pin stream/shard-03* disk=ssd")}
	if _, _, err := f.settle(Policy{}, time.Second, 100, checkRuleKeys); err != nil {
		t.Fatal(err)
	}
	d, err := f.step(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Unplaceable) != 10 || d.Unplaceable[0] != "stream/shard-030" {
		t.Fatalf("unplaceable %v, want shard-030 … shard-039", d.Unplaceable)
	}
	for h, ids := range heldBy(f) {
		if h == "" && len(ids) != 10 {
			t.Errorf("%d shards free, want the 10 pinned", len(ids))
		}
		if h != "" && len(ids) != 7 && len(ids) != 8 {
			t.Errorf("%s holds %d, want 7 or 8 of the 30 placeable", h, len(ids))
		}
	}
	f.join(Member{ID: "ssd", Labels: map[string]string{"disk": "ssd"}})
	if _, _, err := f.settle(Policy{}, time.Second, 100, checkRuleKeys); err != nil {
		t.Fatal(err)
	}
	if got := heldBy(f)["ssd"]; len(got) != 10 || got[0] != "stream/shard-030" {
		t.Errorf("the ssd member holds %v, want the 10 pinned shards", got)
	}
}

// TestPinnedOverflowBalancesTheRest: more shards pinned to one member
// than its share: it holds just them, and the others share the rest.
func TestPinnedOverflowBalancesTheRest(t *testing.T) {
	f := zonedFleet(t, 4, 4, 40, "pin stream/shard-00* zone=z0", "pin stream/shard-01* zone=z0", "pin stream/shard-020 zone=z0")
	got := heldBy(f)
	if len(got["m0"]) != 21 {
		t.Errorf("m0 holds %d, want the 21 pinned to it", len(got["m0"]))
	}
	for _, m := range []string{"m1", "m2", "m3"} {
		if n := len(got[m]); n < 6 || n > 7 {
			t.Errorf("%s holds %d, want 6 or 7 of the 19 left", m, n)
		}
	}
}

func TestInvalidRuleIsRefused(t *testing.T) {
	s := State{Shards: shard.Config{Shards: 4}.IDs(), Members: []Member{{ID: "a"}},
		Rules: []shard.PlacementRule{{Shards: "sh*ard", Kind: shard.RulePin, Labels: map[string]string{"a": "b"}}}}
	if _, err := Step(s, Policy{}); err == nil {
		t.Fatal("a rule with a '*' inside its shards was accepted")
	}
}

// TestUnplaceableLeavesAllowedHolders: a shard only a cordoned member may
// own stays with it and is not reported unplaceable, in count balance and
// in load balance alike; a free one is, in both.
func TestUnplaceableLeavesAllowedHolders(t *testing.T) {
	for _, loads := range []bool{false, true} {
		s := State{Shards: shard.Config{Shards: 4}.IDs(), Holders: []string{"a", "", "b", "b"},
			Members: []Member{{ID: "a", Cordoned: true, Labels: map[string]string{"disk": "ssd"}}, {ID: "b"}},
			Rules:   []shard.PlacementRule{rule("pin stream/shard-00* disk=ssd")}}
		if loads {
			s.Loads = map[shard.ID]float64{"stream/shard-000": 1, "stream/shard-001": 2, "stream/shard-002": 3, "stream/shard-003": 4}
		}
		s.Assigned = map[string]Assignment{"a": {Shards: []shard.ID{"stream/shard-000"}}, "b": {Shards: []shard.ID{"stream/shard-002", "stream/shard-003"}}}
		d, err := Step(s, Policy{})
		if err != nil {
			t.Fatal(err)
		}
		// 000 is a's (cordoned, allowed); 001 is free and only a may own
		// it; 002 and 003 are held by b, whom the pin excludes.
		want := []shard.ID{"stream/shard-001", "stream/shard-002", "stream/shard-003"}
		if !slices.Equal(d.Unplaceable, want) {
			t.Errorf("loads %v: unplaceable %v, want %v", loads, d.Unplaceable, want)
		}
		if a, ok := d.Assign["a"]; ok && !slices.Contains(a.Shards, "stream/shard-000") {
			t.Errorf("loads %v: a's key %v lost the shard it holds and alone may own", loads, a.Shards)
		}
		if err := checkRuleKeys(s, d); err != nil {
			t.Errorf("loads %v: %v", loads, err)
		}
	}
}
