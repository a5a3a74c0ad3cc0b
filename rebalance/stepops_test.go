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

// stepOpsCases continue after the other Step cases' numbers.
const stepOpsCases = 2_000

// TestStepOperatorStates draws states as TestStepInvariants does and adds
// cordons, a freeze and returning workers (live or gone, inside or past
// their grace), and checks what each promises:
//
//   - a cordoned member (not all are) gains no shard: its new key lists
//     only shards it holds, and no move is to it;
//   - frozen: no hand-off starts;
//   - a returning worker inside its grace keeps its key (not written, not
//     deleted), nobody else's key gains a shard of it that no other live
//     member holds, no move touches those shards, and the step wakes at
//     the end of the grace at the latest;
//   - a grace that is over changes nothing: the decision is the one
//     without it.
func TestStepOperatorStates(t *testing.T) {
	forCases(t, stepCasesFrom+stepCases+stepSimCases+stepJoinLeaves, stepOpsCases, func(t *testing.T, i int, r *rand.Rand) {
		s, p := genState(r, 1+r.IntN(12), 1+r.IntN(256))
		for k := range s.Members {
			s.Members[k].Cordoned = r.IntN(4) == 0
		}
		s.Frozen = r.IntN(3) == 0
		past := map[string]time.Time{}
		workers := slices.Sorted(maps.Keys(s.Assigned))
		for _, m := range s.Members {
			workers = append(workers, m.ID)
		}
		for _, w := range workers {
			switch r.IntN(6) {
			case 0:
				if s.Returning == nil {
					s.Returning = map[string]time.Time{}
				}
				s.Returning[w] = s.Now.Add(time.Duration(1+r.IntN(30)) * time.Second)
			case 1:
				past[w] = s.Now.Add(-time.Duration(r.IntN(30)) * time.Second)
			}
		}
		d, err := Step(s, p)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := checkOperatorStates(s, d); err != nil {
			t.Fatalf("case %d (%d shards, %d members, frozen %v, returning %v): %v", i, len(s.Shards), len(s.Members), s.Frozen, s.Returning, err)
		}
		// A grace that is over is no grace.
		with := s
		with.Returning = maps.Clone(s.Returning)
		if with.Returning == nil {
			with.Returning = map[string]time.Time{}
		}
		maps.Copy(with.Returning, past)
		for w := range s.Returning {
			delete(with.Returning, w) // only the past ones differ
		}
		without := s
		without.Returning = nil
		a, errA := Step(with, p)
		b, errB := Step(without, p)
		if errA != nil || errB != nil || !sameDecision(a, b) {
			t.Fatalf("case %d: a grace that ended changes the decision (%v, %v):\n%+v\n%+v", i, errA, errB, a, b)
		}
	})
}

// checkOperatorStates checks d against the cordons, freeze and returning
// workers of s (see TestStepOperatorStates).
func checkOperatorStates(s State, d Decision) error {
	holders := holderMap(s)
	back := map[string]bool{}
	for w, until := range s.Returning {
		if s.Now.Before(until) {
			back[w] = true
			if d.Wake.IsZero() || d.Wake.After(until) {
				return fmt.Errorf("wake %v is after the grace of %s ending at %v", d.Wake, w, until)
			}
		}
	}
	live := map[string]bool{}
	allCordoned := true
	for _, m := range s.Members {
		live[m.ID] = true
		allCordoned = allCordoned && (m.Cordoned || back[m.ID]) // a returning member is not planned for
	}
	for _, m := range s.Members {
		if !m.Cordoned || allCordoned || back[m.ID] {
			continue
		}
		if a, ok := d.Assign[m.ID]; ok {
			for _, id := range a.Shards {
				if holders[id] != m.ID {
					return fmt.Errorf("cordoned %s is given %s, which it does not hold (holder %q)", m.ID, id, holders[id])
				}
			}
		}
		for _, mv := range d.Moves {
			if mv.To == m.ID {
				return fmt.Errorf("a move to cordoned %s: %+v", m.ID, mv)
			}
		}
	}
	if s.Frozen {
		for _, mv := range d.Moves {
			if mv.From != "" {
				return fmt.Errorf("frozen, yet a hand-off started: %+v", mv)
			}
		}
	}
	reserved := map[shard.ID]string{}
	for w := range back {
		if _, ok := d.Assign[w]; ok {
			return fmt.Errorf("returning %s's key is written: %+v", w, d.Assign[w])
		}
		if slices.Contains(d.Delete, w) {
			return fmt.Errorf("returning %s's key is deleted", w)
		}
		for _, id := range s.Assigned[w].Shards {
			if h, held := holders[id]; !held || h == w || !live[h] || back[h] {
				reserved[id] = w
			}
		}
	}
	for w, a := range d.Assign {
		for _, id := range a.Shards {
			if o, ok := reserved[id]; ok && !slices.Contains(s.Assigned[w].Shards, id) {
				return fmt.Errorf("%s is given %s, kept for returning %s", w, id, o)
			}
		}
	}
	for _, mv := range d.Moves {
		if o, ok := reserved[mv.Shard]; ok {
			return fmt.Errorf("a move of %s, kept for returning %s: %+v", mv.Shard, o, mv)
		}
	}
	return nil
}

// rollingFleet is a fleet of the named good members of weight 1 with n
// shards, at rest.
func rollingFleet(t *testing.T, n int, names ...string) *fleet {
	t.Helper()
	f := &fleet{
		s:     State{Now: epoch, Shards: shard.Config{Shards: n}.IDs(), Holders: make([]string, n), Assigned: map[string]Assignment{}},
		kinds: map[string]behavior{},
		r:     rand.New(rand.NewPCG(16, 1)),
	}
	for _, id := range names {
		f.join(Member{ID: id, Weight: 1})
	}
	if _, _, err := f.settle(Policy{}, 100*time.Millisecond, 100, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// round steps, checks and applies one decision, lets the workers act and
// moves the clock; it returns the decision.
func (f *fleet) round(t *testing.T, p Policy) Decision {
	t.Helper()
	d, err := f.step(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkOperatorStates(f.s, d); err != nil {
		t.Fatal(err)
	}
	f.apply(d)
	f.act()
	f.s.Now = f.s.Now.Add(100 * time.Millisecond)
	return d
}

// restart stops member id with a grace (it marks itself returning, then
// releases everything and its session ends) and keeps it away for down.
func (f *fleet) restart(t *testing.T, id string, grace, down time.Duration) (moves []Transfer) {
	t.Helper()
	if f.s.Returning == nil {
		f.s.Returning = map[string]time.Time{}
	}
	f.s.Returning[id] = f.s.Now.Add(grace)
	moves = append(moves, f.round(t, Policy{}).Moves...) // it is still live: it marked itself, its handlers drain
	for i, h := range f.s.Holders {
		if h == id {
			f.s.Holders[i] = ""
		}
	}
	moves = append(moves, f.round(t, Policy{}).Moves...) // released, still live
	f.leave(id)
	for end := f.s.Now.Add(down); f.s.Now.Before(end); {
		moves = append(moves, f.round(t, Policy{}).Moves...)
	}
	return moves
}

// TestStepRollingRestartWithGrace: each member of a fleet at rest restarts
// in turn within its grace; nothing moves, and each gets back exactly the
// shards it had.
func TestStepRollingRestartWithGrace(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	f := rollingFleet(t, 64, names...)
	before := slices.Clone(f.s.Holders)
	for _, id := range names {
		if moves := f.restart(t, id, 10*time.Second, 3*time.Second); len(moves) > 0 {
			t.Fatalf("restart of %s within its grace moved %+v", id, moves)
		}
		delete(f.s.Returning, id) // it joins again, without RejoinUntil
		f.join(Member{ID: id, Weight: 1})
		_, moves, err := f.settle(Policy{}, 100*time.Millisecond, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(moves) > 0 {
			t.Fatalf("rejoin of %s moved %+v", id, moves)
		}
	}
	if !slices.Equal(before, f.s.Holders) {
		t.Fatalf("holders after the rolling restart differ from before:\n%v\n%v", before, f.s.Holders)
	}
}

// TestStepGracePassed: a worker that does not come back within its grace
// has its shards placed on the others when it ends (the step woke for it),
// and its key deleted; before that, nothing moves.
func TestStepGracePassed(t *testing.T) {
	f := rollingFleet(t, 30, "a", "b", "c")
	kept := slices.Clone(f.s.Assigned["c"].Shards)
	if moves := f.restart(t, "c", 3*time.Second, 2*time.Second); len(moves) > 0 {
		t.Fatalf("moves inside the grace: %+v", moves)
	}
	f.s.Now = f.s.Returning["c"]
	d := f.round(t, Policy{})
	if !slices.Equal(d.Delete, []string{"c"}) {
		t.Fatalf("past the grace: delete %v, want [c]", d.Delete)
	}
	placed := map[shard.ID]bool{}
	for _, mv := range d.Moves {
		if mv.From != "" || mv.To == "c" {
			t.Fatalf("past the grace: unexpected move %+v", mv)
		}
		placed[mv.Shard] = true
	}
	for _, id := range kept {
		if !placed[id] {
			t.Fatalf("past the grace: %s of c was not placed (moves %+v)", id, d.Moves)
		}
	}
}

// TestStepCordonAndFreezeTable: cordoned members get none of a crashed
// member's shards; a freeze stops the hand-offs a join would start but
// not the placement of a crashed member's shards.
func TestStepCordonAndFreezeTable(t *testing.T) {
	t.Run("cordon", func(t *testing.T) {
		f := rollingFleet(t, 30, "a", "b", "c")
		had := slices.Clone(f.s.Assigned["a"].Shards)
		f.s.Members[0].Cordoned = true // a
		f.leave("c")
		if _, _, err := f.settle(Policy{}, 100*time.Millisecond, 100, checkOperatorStates); err != nil {
			t.Fatal(err)
		}
		if got := f.s.Assigned["a"].Shards; !slices.Equal(got, had) {
			t.Fatalf("cordoned a: %v, want what it had, %v", got, had)
		}
		if got := len(f.s.Assigned["b"].Shards); got != 20 {
			t.Fatalf("b has %d shards, want the 20 a does not hold", got)
		}
		f.s.Members[0].Cordoned = false
		f.join(Member{ID: "d", Weight: 1}) // and a cordon lifted: balance again
		if _, _, err := f.settle(Policy{}, 100*time.Millisecond, 100, nil); err != nil {
			t.Fatal(err)
		}
		if err := checkBalance(f.s); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("freeze", func(t *testing.T) {
		f := rollingFleet(t, 30, "a", "b", "c")
		f.s.Frozen = true
		f.join(Member{ID: "d", Weight: 1})
		f.join(Member{ID: "e", Weight: 1})
		if _, moves, err := f.settle(Policy{}, 100*time.Millisecond, 100, checkOperatorStates); err != nil {
			t.Fatal(err)
		} else if len(moves) != 0 {
			t.Fatalf("frozen: joins moved %+v", moves)
		}
		f.leave("c")
		if _, moves, err := f.settle(Policy{}, 100*time.Millisecond, 100, checkOperatorStates); err != nil {
			t.Fatal(err)
		} else if len(moves) != 10 {
			t.Fatalf("frozen: %d moves, want the 10 of crashed c: %+v", len(moves), moves)
		}
		f.s.Frozen = false
		if _, moves, err := f.settle(Policy{}, 100*time.Millisecond, 100, nil); err != nil {
			t.Fatal(err)
		} else if len(moves) == 0 {
			t.Fatal("unfrozen: no hand-off to the joiner")
		}
		if err := checkBalance(f.s); err != nil {
			t.Fatal(err)
		}
	})
}
