package assignorstep

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// stepStates builds the states assignor-step times rebalance.Step on:
// members with distinct, non-sequential IDs in random order; cold is
// nothing held or assigned; steady is a fleet settled by stepping, writing
// the keys and letting every worker act on its own key until a Step decides
// nothing; join is steady with one member more; leave is steady with its
// first member gone (its shards orphaned). With zones > 0 member i is in
// zone i mod zones (the joiner in the first member's). Steady, join and
// leave are as the assignor reads them (see asRead).
func stepStates(workers, shards, zones, rules int) (cold, steady, join, leave rebalance.State, err error) {
	r := rand.New(rand.NewPCG(1, 2))
	s := rebalance.State{
		Now:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Shards:   shard.Config{Shards: shards}.IDs(),
		Holders:  make([]string, shards),
		Assigned: map[string]rebalance.Assignment{},
	}
	for i, k := range r.Perm(4 * workers)[:workers] {
		id := fmt.Sprintf("worker-%d", k)
		m := rebalance.Member{ID: id, Weight: 1, Session: shard.SessionID(fmt.Sprintf("%s#%d", id, r.Uint32()))}
		if zones > 0 {
			m.Zone = fmt.Sprintf("zone-%d", i%zones)
		}
		if rules > 0 {
			m.Labels = map[string]string{"disk": "ssd"}
			if i%10 == 9 {
				m.Labels["disk"] = "hdd"
			}
		}
		s.Members = append(s.Members, m)
	}
	s.Rules = stepRules(rules, zones, shards)
	cold = cloneState(s)
	if err := settleState(&s, 100*time.Millisecond, 10); err != nil {
		return cold, steady, join, leave, err
	}
	if steady, err = asRead(s); err != nil {
		return cold, steady, join, leave, err
	}
	join, leave = steady, steady // the same reading but for the members
	join.Members = append(slices.Clone(steady.Members), rebalance.Member{ID: "joiner", Weight: 1, Session: "joiner#1", Zone: steady.Members[0].Zone, Labels: steady.Members[0].Labels})
	leave.Members = steady.Members[1:]
	return cold, steady, join, leave, nil
}

// stepRules returns n placement rules over shards in a Config's form, each
// about its own prefix of the IDs (shards/n of them each, n a power of
// ten up to shards): a third pin their shards to a zone, a third prefer
// one, a third avoid the members labelled disk=hdd (a tenth of them).
// Zones are zone-0 … zone-(zones-1); with none, pins and prefers name
// disk=ssd.
func stepRules(n, zones, shards int) []shard.PlacementRule {
	if n == 0 {
		return nil
	}
	ids := shard.Config{Shards: shards}.IDs()
	first := string(ids[0])
	digits := len(fmt.Sprint(n - 1))
	stem := first[:len(first)-len(fmt.Sprint(shards-1))]
	out := make([]shard.PlacementRule, n)
	for k := range n {
		sel := map[string]string{"disk": "ssd"}
		if zones > 0 {
			sel = map[string]string{"zone": fmt.Sprintf("zone-%d", (k/3)%zones)}
		}
		r := shard.PlacementRule{Shards: fmt.Sprintf("%s%0*d*", stem, digits, k), Labels: sel}
		switch k % 3 {
		case 0:
			r.Kind = shard.RulePin
		case 1:
			r.Kind = shard.RulePrefer
		default:
			r.Kind, r.Labels = shard.RuleAvoid, map[string]string{"disk": "hdd"}
		}
		out[k] = r
	}
	return out
}

// settleState steps, writes the decision's keys and lets every worker act
// on its key (release what it holds and is not given, take what it is
// given and is free), advancing the clock by tick a round, until a Step
// decides nothing and every worker holds exactly its key; an error after
// limit rounds.
func settleState(s *rebalance.State, tick time.Duration, limit int) error {
	for range limit {
		d, err := rebalance.Step(*s, rebalance.Policy{})
		if err != nil {
			return err
		}
		if len(d.Assign) == 0 && len(d.Delete) == 0 && len(d.Moves) == 0 && d.Wake.IsZero() && atRest(*s) {
			return nil
		}
		maps.Copy(s.Assigned, d.Assign)
		for _, w := range d.Delete {
			delete(s.Assigned, w)
		}
		act(s)
		s.Now = s.Now.Add(tick)
	}
	return fmt.Errorf("rebalance.Step: a fleet of %d workers over %d shards not settled after %d rounds", len(s.Members), len(s.Shards), limit)
}

// act lets every member act once on its key: first every release, then
// every take of a free shard.
func act(s *rebalance.State) {
	for i, h := range s.Holders {
		if h == "" {
			continue
		}
		if _, keep := slices.BinarySearch(s.Assigned[h].Shards, s.Shards[i]); !keep {
			s.Holders[i] = ""
		}
	}
	for _, m := range s.Members {
		for _, sh := range s.Assigned[m.ID].Shards {
			if i, _ := slices.BinarySearch(s.Shards, sh); s.Holders[i] == "" {
				s.Holders[i] = m.ID
			}
		}
	}
}

// atRest: every member holds exactly its key.
func atRest(s rebalance.State) bool {
	n, held := 0, 0
	for _, h := range s.Holders {
		if h != "" {
			held++
		}
	}
	for _, m := range s.Members {
		for _, sh := range s.Assigned[m.ID].Shards {
			if i, _ := slices.BinarySearch(s.Shards, sh); s.Holders[i] != m.ID {
				return false
			}
			n++
		}
	}
	return n == held
}

// cloneState returns a copy of s that shares nothing mutable with it.
func cloneState(s rebalance.State) rebalance.State {
	s.Members = slices.Clone(s.Members)
	s.Holders = slices.Clone(s.Holders)
	s.Assigned = maps.Clone(s.Assigned)
	return s
}

// asRead returns s with its strings as reading the coordinator makes them:
// each assignment key's shards decoded from its stored form, so that no
// two keys share strings, and each holder the ID of the member whose
// session holds the lock (as act sets it).
func asRead(s rebalance.State) (rebalance.State, error) {
	cfg := shard.Config{Shards: len(s.Shards)}
	assigned := make(map[string]rebalance.Assignment, len(s.Assigned))
	for w, a := range s.Assigned {
		enc, err := keycodec.EncodeSet(cfg, a.Shards)
		if err != nil {
			return s, err
		}
		if a.Shards, err = keycodec.DecodeSet(cfg, enc); err != nil {
			return s, err
		}
		assigned[w] = a
	}
	s.Assigned = assigned
	// act made every holder the ID string of its member, which is what
	// deriving holders by session gives.
	s.Holders = slices.Clone(s.Holders)
	s.Members = slices.Clone(s.Members)
	return s, nil
}
