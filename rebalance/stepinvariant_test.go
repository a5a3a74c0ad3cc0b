package rebalance

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Case counts for Step, kept affordable under -race: each case steps
// several times, a simulation case dozens of times.
const (
	stepCases      = 3_000
	stepSimCases   = 400
	stepJoinLeaves = 500
)

// epoch is the generated states' clock origin.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// genState draws a state of w members and n shards: the members, shards
// and holders of genFleet (weights, draining, dead and skewed holders),
// sessions, and keys that mix the holder's own shards, free shards, shards
// held by someone else, shards in several keys, keys of dead workers, stuck
// marks under the member's session or another, and waits of every age
// (including in the future). The policy's cap and StuckAfter are sometimes
// the defaults, sometimes small.
func genState(r *rand.Rand, w, n int) (State, Policy) {
	members, shards, holders := genFleet(r, w, n)
	s := State{
		Now:      epoch.Add(time.Duration(r.IntN(3600)) * time.Second),
		Shards:   shards,
		Members:  members,
		Holders:  holders,
		Assigned: map[string]Assignment{},
	}
	for i := range s.Members {
		s.Members[i].Session = shard.SessionID(fmt.Sprintf("%s#%d", s.Members[i].ID, r.IntN(2)))
	}
	workers := make([]string, 0, w+2)
	for _, m := range s.Members {
		if r.IntN(5) != 0 {
			workers = append(workers, m.ID)
		}
	}
	for k := range r.IntN(3) {
		workers = append(workers, fmt.Sprintf("gone-%d", k))
	}
	if len(workers) == 0 {
		return s, genPolicy(r)
	}
	keys := map[string][]shard.ID{}
	pKeep, pOther, pMore := r.Float64(), r.Float64()*r.Float64(), r.Float64()*0.1
	for i, id := range s.Shards {
		h := s.Holders[i]
		_, hasKey := keys[h]
		switch u := r.Float64(); {
		case h != "" && slices.Contains(workers, h) && u < pKeep:
			keys[h] = append(keys[h], id)
		case u < pKeep+pOther:
			o := workers[r.IntN(len(workers))]
			keys[o] = append(keys[o], id)
		}
		if r.Float64() < pMore { // in one key more (maybe a conflict)
			o := workers[r.IntN(len(workers))]
			if !slices.Contains(keys[o], id) {
				keys[o] = append(keys[o], id)
			}
		}
		_ = hasKey
	}
	session := map[string]shard.SessionID{}
	for _, m := range s.Members {
		session[m.ID] = m.Session
	}
	for _, o := range workers {
		a := Assignment{Shards: keys[o], Since: s.Now.Add(-time.Duration(r.IntN(10_000)) * time.Millisecond)}
		if r.IntN(2) == 0 {
			slices.Sort(a.Shards)
		}
		switch r.IntN(12) {
		case 0:
			a.Stuck, a.StuckSession = true, session[o]
		case 1:
			a.Stuck, a.StuckSession = true, "old-session"
		case 2: // on probation
			a.StuckSession = session[o]
		}
		if a.StuckSession != "" && r.IntN(4) != 0 {
			// Verdicts: some ended, some lasting, some stamped in the future.
			a.Verdicts = 1 + r.IntN(8)
			a.StuckSince = s.Now.Add(time.Duration(r.IntN(300_000)-290_000) * time.Millisecond)
		} else if !a.Stuck {
			a.StuckSession = ""
		}
		if r.IntN(3) != 0 && len(a.Shards) > 0 {
			a.Waiting = 1 + r.IntN(len(a.Shards))
			a.WaitingSince = s.Now.Add(time.Duration(r.IntN(6000)-5000) * time.Millisecond)
		}
		s.Assigned[o] = a
	}
	return s, genPolicy(r)
}

// genStandbys makes some members run standbys, reporting some of the
// shards ready, and lists standbys in some keys, some preparing since any
// time (the future too).
func genStandbys(r *rand.Rand, s *State) {
	if r.IntN(3) == 0 {
		return
	}
	for _, w := range slices.Sorted(maps.Keys(s.Assigned)) { // in order: a case replays alone
		a := s.Assigned[w]
		if r.IntN(3) != 0 {
			continue
		}
		a.Standby, a.Preparing = nil, nil
		for range r.IntN(4) {
			id := s.Shards[r.IntN(len(s.Shards))]
			if slices.Contains(a.Standby, id) {
				continue
			}
			a.Standby = append(a.Standby, id)
			if r.IntN(2) == 0 {
				if a.Preparing == nil {
					a.Preparing = map[shard.ID]time.Time{}
				}
				a.Preparing[id] = s.Now.Add(time.Duration(r.IntN(120)-100) * time.Second)
			}
		}
		slices.Sort(a.Standby)
		s.Assigned[w] = a
	}
	for k := range s.Members {
		if r.IntN(3) == 0 {
			continue
		}
		m := &s.Members[k]
		m.Standby = true
		for range r.IntN(8) {
			if m.Standbys == nil {
				m.Standbys = map[shard.ID]shard.StandbyState{}
			}
			m.Standbys[s.Shards[r.IntN(len(s.Shards))]] = shard.StandbyState{Applied: int64(r.IntN(100)), Ready: r.IntN(2) == 0}
		}
	}
}

func genPolicy(r *rand.Rand) Policy {
	var p Policy
	if r.IntN(2) == 0 {
		p.MaxMovesInFlight = 1 + r.IntN(8)
	}
	if r.IntN(2) == 0 {
		p.StuckAfter = time.Duration(1+r.IntN(3000)) * time.Millisecond
	}
	if r.IntN(2) == 0 {
		p.PrepareTimeout = time.Duration(1+r.IntN(60)) * time.Second
	}
	return p
}

// shuffledState returns a copy of s with members, shards and every key's
// shards in another order and every map rebuilt.
func shuffledState(r *rand.Rand, s State) State {
	out := s
	out.Members = slices.Clone(s.Members)
	r.Shuffle(len(out.Members), func(i, j int) { out.Members[i], out.Members[j] = out.Members[j], out.Members[i] })
	out.Shards = slices.Clone(s.Shards)
	out.Holders = slices.Clone(s.Holders)
	r.Shuffle(len(out.Shards), func(i, j int) {
		out.Shards[i], out.Shards[j] = out.Shards[j], out.Shards[i]
		if len(out.Holders) > 0 {
			out.Holders[i], out.Holders[j] = out.Holders[j], out.Holders[i]
		}
	})
	out.Assigned = make(map[string]Assignment, len(s.Assigned))
	for w, a := range s.Assigned {
		a.Shards = slices.Clone(a.Shards)
		r.Shuffle(len(a.Shards), func(i, j int) { a.Shards[i], a.Shards[j] = a.Shards[j], a.Shards[i] })
		out.Assigned[w] = a
	}
	return out
}

// applied returns s with d's keys written (and nothing else changed).
func applied(s State, d Decision) State {
	out := s
	out.Assigned = make(map[string]Assignment, len(s.Assigned))
	maps.Copy(out.Assigned, s.Assigned)
	for w, a := range d.Assign {
		out.Assigned[w] = a
	}
	for _, w := range d.Delete {
		delete(out.Assigned, w)
	}
	return out
}

// TestStepInvariants checks every decision guarantee over generated states,
// that the order of the input does not matter, and that a decision, once
// written, is a fixed point until a worker acts or time passes (the
// assignor sees its own writes and steps again: that must change nothing).
func TestStepInvariants(t *testing.T) {
	forCases(t, stepCasesFrom, stepCases, func(t *testing.T, i int, r *rand.Rand) {
		w, n := 1+r.IntN(64), shardCount(r)
		if i%500 == 499 {
			w, n = 64, 4096 // the largest fleet, every time
		}
		s, p := genState(r, w, n)
		genStandbys(r, &s)
		p.Standbys = r.IntN(3)
		d, err := Step(s, p)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := checkDecision(s, p, d); err != nil {
			t.Fatalf("case %d (%d shards, %d members): %v", i, len(s.Shards), len(s.Members), err)
		}
		if d2, err := Step(shuffledState(r, s), p); err != nil || !sameDecision(d, d2) {
			t.Fatalf("case %d: shuffled state gave another decision (err %v)", i, err)
		}
		// The shard set in order is a Config's IDs, read without a map:
		// the same decision.
		inOrder := s
		inOrder.Shards = slices.Sorted(slices.Values(s.Shards))
		inOrder.Holders = aligned(inOrder.Shards, holderMap(s))
		if d4, err := Step(inOrder, p); err != nil || !sameDecision(d, d4) {
			t.Fatalf("case %d: the shards in order gave another decision (err %v)", i, err)
		}
		again := applied(s, d)
		d3, err := Step(again, p)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(d3.Assign) != 0 || len(d3.Moves) != 0 || len(d3.Delete) != 0 || !d3.Wake.Equal(d.Wake) {
			t.Fatalf("case %d: the written decision is not a fixed point: %d keys, moves %v, delete %v, wake %v then %v",
				i, len(d3.Assign), d3.Moves, d3.Delete, d.Wake, d3.Wake)
		}
	})
}
