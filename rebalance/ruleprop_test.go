package rebalance

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

var ruleSteps = flag.Int("rules.steps", 20_000, "rebalance.Step calls TestRuleProperty makes over its generated fleets")

// genRule is a random rule over a fleet of up to 100 shards in the
// Config's form: a tenth of the shards by prefix, one shard, or all; a
// zone or a disk label.
func genRule(r *rand.Rand, zones int) shard.PlacementRule {
	kind := []shard.RuleKind{shard.RulePin, shard.RuleAvoid, shard.RulePrefer}[r.IntN(3)]
	var shards string
	switch k := r.IntN(10); {
	case k < 6:
		shards = fmt.Sprintf("stream/shard-0%d*", r.IntN(7))
	case k < 9:
		shards = fmt.Sprintf("stream/shard-0%02d", r.IntN(64))
	default:
		shards = "*"
	}
	labels := map[string]string{"zone": fmt.Sprintf("z%d", r.IntN(zones))}
	if r.IntN(2) == 0 {
		labels = map[string]string{"disk": []string{"ssd", "hdd"}[r.IntN(2)]}
	}
	return shard.PlacementRule{Shards: shards, Kind: kind, Labels: labels}
}

// TestRuleProperty: fleets with members in zones, with labels, random
// weights, placement rules added and removed, joins, crashes, drains and
// cordons, stepped until they settle, over -rules.steps Step calls in all.
// Every decision places no shard where a hard rule forbids it
// (checkRuleKeys). After every settling: no live member holds a shard the
// rules exclude it from; a shard is unowned only when no live member that
// may be given shards is allowed it; and in count balance without hard
// rules or cordons every member holds exactly its zoned quota
// (checkSettled). A third of the fleets balance load. Under hard
// rules the balance is greedy; how often it is off by more than one
// between two members that could even it (uneven) is counted and logged,
// not failed: docs/design.md states that limit.
func TestRuleProperty(t *testing.T) {
	steps, fleets, events, ruled := 0, 0, 0, 0
	unevenCount, worstGap, loaded := 0, 0, 0
	for c := 0; steps < *ruleSteps; c++ {
		r := rand.New(rand.NewPCG(seed, 1<<41+uint64(c)))
		n := 1 + r.IntN(64)
		f := newFleet(r, 0, n)
		zones := 1 + r.IntN(3)
		next := 0
		add := func() {
			m := Member{ID: fmt.Sprintf("m%02d", next), Weight: 1 + r.IntN(2), Zone: fmt.Sprintf("z%d", r.IntN(zones))}
			if d := r.IntN(3); d < 2 {
				m.Labels = map[string]string{"disk": []string{"ssd", "hdd"}[d]}
			}
			next++
			f.join(m)
		}
		for range 1 + r.IntN(8) {
			add()
		}
		for range r.IntN(4) {
			f.s.Rules = append(f.s.Rules, genRule(r, zones))
		}
		if r.IntN(3) == 0 { // a third balance load: the rules hold there too
			f.s.Loads = map[shard.ID]float64{}
			for _, id := range f.s.Shards {
				f.s.Loads[id] = 1 + 4*r.Float64()
			}
			loaded++
		}
		fleets++
		for e := range 12 {
			switch k := r.IntN(12); {
			case e == 0:
			case k < 3 || len(f.s.Members) == 1:
				add()
			case k < 5:
				f.leave(f.s.Members[r.IntN(len(f.s.Members))].ID)
			case k < 7:
				i := r.IntN(len(f.s.Members))
				f.s.Members[i].Draining = !f.s.Members[i].Draining
			case k < 8:
				i := r.IntN(len(f.s.Members))
				f.s.Members[i].Cordoned = !f.s.Members[i].Cordoned
			case k < 10 || len(f.s.Rules) == 0:
				f.s.Rules = append(slices.Clone(f.s.Rules), genRule(r, zones))
			default:
				f.s.Rules = slices.Delete(slices.Clone(f.s.Rules), 0, 1)
			}
			events++
			p := Policy{MaxMovesInFlight: []int{1, 4, 0}[r.IntN(3)], Load: LoadPolicy{Patience: time.Second, MinResidence: 2 * time.Second}}
			rounds, _, err := f.settle(p, time.Second, 400, checkRuleKeys)
			steps += rounds + 1
			if err != nil {
				for range 2 {
					d, _ := f.step(p)
					t.Logf("moves %v assign %d held %v", d.Moves, len(d.Assign), describe(f, nil))
					f.apply(d)
					f.act()
					f.s.Now = f.s.Now.Add(time.Second)
				}
				t.Fatalf("fleet %d, event %d (rules %v, policy %+v): %v", c, e, f.s.Rules, p, err)
			}
			hard, err := checkRuleSettled(f)
			if err != nil {
				t.Fatalf("fleet %d, event %d (%d members, %d shards, rules %v): %v", c, e, len(f.s.Members), n, f.s.Rules, err)
			}
			if hard && f.s.Loads == nil {
				ruled++
				if g := uneven(f); g > 1 {
					unevenCount++
					worstGap = max(worstGap, g)
				}
			}
		}
	}
	t.Logf("%d Step calls over %d fleets (%d balancing load) and %d events: no hard rule broken, no shard left unowned that a member could take, zoned quotas exact in count balance without hard rules", steps, fleets, loaded, events)
	t.Logf("%d settlings under hard rules; in %d of them two members of one zone and weight differed by more than one while the fuller held a shard the other could take (largest gap %d): the greedy limit docs/design.md states", ruled, unevenCount, worstGap)
}

// checkRuleSettled checks a settled fleet under rules, and reports whether
// a hard rule excluded some live member from some shard.
func checkRuleSettled(f *fleet) (bool, error) {
	live := f.live()
	count := map[string]int{}
	hard, cordons := false, false
	for _, m := range live {
		cordons = cordons || m.Cordoned
	}
	for i, h := range f.s.Holders {
		id := f.s.Shards[i]
		for _, m := range live {
			if !shard.Allows(f.s.Rules, id, m.Zone, m.Labels) {
				hard = true
			}
		}
		if m, ok := live[h]; ok {
			if !shard.Allows(f.s.Rules, id, m.Zone, m.Labels) {
				return hard, fmt.Errorf("%s is held by %s (zone %q, labels %v), which the rules exclude", id, h, m.Zone, m.Labels)
			}
			count[h]++
			continue
		}
		for _, m := range live {
			if !m.Cordoned && shard.Allows(f.s.Rules, id, m.Zone, m.Labels) {
				return hard, fmt.Errorf("%s is unowned, and %s (zone %q, labels %v) may take it", id, m.ID, m.Zone, m.Labels)
			}
		}
	}
	if !hard && !cordons && f.s.Loads == nil {
		return hard, checkSettled(f, len(f.s.Shards))
	}
	return hard, nil
}

// uneven reports, for a fleet settled under hard rules, the largest gap
// between two members of one zone and weight (neither cordoned, nor
// draining unless all do) where the fuller holds a shard the other may
// take: 0 or 1 when balance is as even as the rules allow it locally.
func uneven(f *fleet) int {
	live := f.live()
	count := map[string]int{}
	for _, h := range f.s.Holders {
		count[h]++
	}
	allDrain := true
	for _, m := range live {
		allDrain = allDrain && m.Draining
	}
	worst := 0
	for _, a := range live {
		for _, b := range live {
			gap := count[a.ID] - count[b.ID]
			if a.Zone != b.Zone || a.Weight != b.Weight || a.Cordoned || b.Cordoned || (!allDrain && (a.Draining || b.Draining)) || gap <= worst {
				continue
			}
			for i, h := range f.s.Holders {
				if h == a.ID && shard.Allows(f.s.Rules, f.s.Shards[i], b.Zone, b.Labels) {
					worst = gap
					break
				}
			}
		}
	}
	return worst
}

func describe(f *fleet, count map[string]int) string {
	var out []string
	for _, m := range f.s.Members {
		held := 0
		for _, h := range f.s.Holders {
			if h == m.ID {
				held++
			}
		}
		out = append(out, fmt.Sprintf("%s(%s %v w%d d%v c%v)=%d key %d", m.ID, m.Zone, m.Labels, m.Weight, m.Draining, m.Cordoned, held, len(f.s.Assigned[m.ID].Shards)))
	}
	return fmt.Sprint(out)
}
