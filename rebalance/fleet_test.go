package rebalance

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// behavior is how a simulated worker follows its assignment.
type behavior uint8

const (
	good  behavior = iota // takes every free shard it is given, releases what is taken away, at once
	slow                  // takes some of them each round, releases late
	stuck                 // releases, but never takes anything
)

// fleet simulates the protocol around Step: the assignor's keys, the locks,
// and workers that act on their own key only. Time is the fleet's clock,
// advanced by the caller.
type fleet struct {
	s     State
	kinds map[string]behavior
	r     *rand.Rand
	at    map[shard.ID]int // each shard's index in s.Shards, which never change; made on first use
}

// newFleet returns a fleet of w good members (weight 1, sessions "<id>#1")
// and n shards, nothing held, nothing assigned.
func newFleet(r *rand.Rand, w, n int) *fleet {
	f := &fleet{
		s: State{
			Now:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Shards:   shard.Config{Shards: n}.IDs(),
			Holders:  make([]string, n),
			Assigned: map[string]Assignment{},
		},
		kinds: map[string]behavior{},
		r:     r,
	}
	for _, m := range genMembers(r, w) {
		f.join(m)
	}
	return f
}

// join adds a live member with a session it did not have before.
func (f *fleet) join(m Member) {
	m.Session = shard.SessionID(fmt.Sprintf("%s#%d", m.ID, f.r.Uint32()))
	f.s.Members = append(f.s.Members, m)
	if _, ok := f.kinds[m.ID]; !ok {
		f.kinds[m.ID] = good
	}
}

// leave ends member id's session: it is no longer live and its locks are
// free (as after a crash: nobody released them, they just stop counting).
func (f *fleet) leave(id string) {
	f.s.Members = slices.DeleteFunc(f.s.Members, func(m Member) bool { return m.ID == id })
}

// step runs Step on the current state.
func (f *fleet) step(p Policy) (Decision, error) { return Step(f.s, p) }

// apply writes a decision's keys.
func (f *fleet) apply(d Decision) {
	for w, a := range d.Assign {
		f.s.Assigned[w] = a
	}
	for _, w := range d.Delete {
		delete(f.s.Assigned, w)
	}
}

// holder returns the holder of shard id, "" when it is free.
func (f *fleet) holder(id shard.ID) string { return f.s.Holders[f.position(id)] }

// hold makes h the holder of shard id ("" frees it).
func (f *fleet) hold(id shard.ID, h string) { f.s.Holders[f.position(id)] = h }

// position returns the index of shard id in the fleet's shards.
func (f *fleet) position(id shard.ID) int {
	if f.at == nil {
		f.at = make(map[shard.ID]int, len(f.s.Shards))
		for i, s := range f.s.Shards {
			f.at[s] = i
		}
	}
	i, ok := f.at[id]
	if !ok {
		panic(fmt.Sprintf("shard %q is not the fleet's", id))
	}
	return i
}

// live returns the live members by ID.
func (f *fleet) live() map[string]Member {
	live := make(map[string]Member, len(f.s.Members))
	for _, m := range f.s.Members {
		live[m.ID] = m
	}
	return live
}

// act lets every live worker act once on its key, in a random order: release
// the shards it holds that its key does not list, take the free shards its
// key lists. It returns how many locks changed hands.
func (f *fleet) act() (changes int) {
	live := f.live()
	ids := slices.Sorted(maps.Keys(live))
	f.r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	held := map[string][]shard.ID{}
	for i, s := range f.s.Shards {
		if h := f.s.Holders[i]; h != "" {
			if _, isLive := live[h]; isLive {
				held[h] = append(held[h], s)
			}
		}
	}
	for _, id := range ids {
		kind := f.kinds[id]
		key := f.s.Assigned[id].Shards
		for _, s := range held[id] {
			if _, keep := slices.BinarySearch(key, s); !keep && (kind != slow || f.r.IntN(2) == 0) {
				f.hold(s, "")
				changes++
			}
		}
		for _, s := range key {
			if _, isLive := live[f.holder(s)]; isLive || kind == stuck || (kind == slow && f.r.IntN(3) != 0) {
				continue
			}
			f.hold(s, id)
			changes++
		}
	}
	return changes
}

// settled reports whether the fleet is at rest: every live member holds
// exactly its key, so nothing would act.
func (f *fleet) settled() bool {
	live := f.live()
	n := 0
	for id := range live {
		for _, s := range f.s.Assigned[id].Shards {
			if f.holder(s) != id {
				return false
			}
			n++
		}
	}
	held := 0
	for _, h := range f.s.Holders {
		if _, ok := live[h]; ok {
			held++
		}
	}
	return held == n
}

// quiet reports whether a decision changes nothing.
func quiet(d Decision) bool {
	return len(d.Assign) == 0 && len(d.Delete) == 0 && len(d.Moves) == 0 && d.Wake.IsZero()
}

// settle steps, applies and acts until a Step decides nothing and the fleet
// is at rest, advancing the clock by tick a round; it returns the rounds
// taken and every move, or an error after limit rounds. check, if not nil,
// vets every decision.
func (f *fleet) settle(p Policy, tick time.Duration, limit int, check func(State, Decision) error) (int, []Transfer, error) {
	var moves []Transfer
	for round := 0; round < limit; round++ {
		d, err := f.step(p)
		if err != nil {
			return round, moves, err
		}
		if check != nil {
			if err := check(f.s, d); err != nil {
				return round, moves, fmt.Errorf("round %d: %v", round, err)
			}
		}
		if quiet(d) && f.settled() {
			return round, moves, nil
		}
		moves = append(moves, d.Moves...)
		f.apply(d)
		f.act()
		f.s.Now = f.s.Now.Add(tick)
	}
	return limit, moves, fmt.Errorf("not settled after %d rounds", limit)
}

// snapshot returns a copy of the state that shares nothing mutable with f.
func (f *fleet) snapshot() State {
	s := f.s
	s.Members = slices.Clone(s.Members)
	s.Holders = slices.Clone(s.Holders)
	s.Assigned = maps.Clone(s.Assigned)
	return s
}
