package rebalance

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestStepConverges runs the protocol from generated states (conflicting,
// stale and dead keys, skewed holders, stuck marks) with workers that are
// good, slow (take a third of their free shards a round, release late) or
// stuck (never take anything), and checks every decision, that the fleet
// comes to rest within a bound, the bound on moves, that no shard moves
// twice because of one stuck worker, and the balance at rest.
func TestStepConverges(t *testing.T) {
	forCases(t, stepCasesFrom+stepCases, stepSimCases, func(t *testing.T, i int, r *rand.Rand) {
		w, n := 1+r.IntN(24), 1+r.IntN(512)
		if i%50 == 49 {
			n = 2048
		}
		s, p := genState(r, w, n)
		f := &fleet{s: s, kinds: map[string]behavior{}, r: r}
		for _, m := range s.Members {
			switch u := r.IntN(20); {
			case u < 3:
				f.kinds[m.ID] = slow
			case u < 5:
				f.kinds[m.ID] = stuck
			}
		}
		tick := time.Duration(50+r.IntN(300)) * time.Millisecond
		if err := converge(f, p, tick); err != nil {
			t.Fatalf("case %d (%d shards, %d members, tick %v, %+v): %v", i, n, w, tick, p, err)
		}
	})
}

// converge runs f to rest under p, checking as TestStepConverges says.
func converge(f *fleet, p Policy, tick time.Duration) error {
	stuckAfter := p.StuckAfter
	if stuckAfter <= 0 {
		stuckAfter = DefaultStuckAfter
	}
	capMoves := p.MaxMovesInFlight
	if capMoves <= 0 {
		capMoves = DefaultMaxMovesInFlight(len(f.s.Shards), len(f.s.Members))
	}
	// The bound (the generated cases use up to 72% of it): two stuck
	// verdicts' worth of rounds (a worker judged stuck, then one that was
	// given its shards), the hand-offs of the most skewed start in waves of
	// the cap, two rounds a wave (release, then place and take), and 20
	// rounds for slow workers and conflicts to settle.
	waits := int(stuckAfter/tick) + 2
	limit := 2*waits + 2*(len(f.s.Shards)/capMoves+1) + 20

	moves := map[shard.ID]int{}
	fromStuck := map[string]int{} // shard+worker+verdict: moves off a stuck worker's key
	verdicts := 0
	for round := 0; ; round++ {
		if round > limit {
			return fmt.Errorf("not at rest after %d rounds", limit)
		}
		d, err := f.step(p)
		if err != nil {
			return err
		}
		if err := checkDecision(f.s, p, d); err != nil {
			return fmt.Errorf("round %d: %v", round, err)
		}
		if resting(f.s, d) && f.settled() {
			break
		}
		for w, a := range d.Assign { // verdicts given, ended, and probations ended
			if was := f.s.Assigned[w]; a.Stuck != was.Stuck || (a.Verdicts == 0 && was.Verdicts > 0) {
				verdicts++
			}
		}
		for _, mv := range d.Moves {
			moves[mv.Shard]++
			if mv.Reason == shard.ReasonStuck {
				for w, a := range f.s.Assigned {
					// A verdict is told by its time: the count starts
					// again at 1 after a probation the worker passed.
					after, ok := d.Assign[w]
					if !ok {
						after = a
					}
					if a.Stuck || after.Stuck {
						for _, id := range a.Shards {
							k := fmt.Sprintf("%s\x00%s\x00%d", id, w, after.StuckSince.UnixNano())
							if id == mv.Shard {
								if fromStuck[k]++; fromStuck[k] > 1 {
									return fmt.Errorf("round %d: %s moved off stuck %s twice in one verdict", round, id, w)
								}
							}
						}
					}
				}
			}
		}
		f.apply(d)
		f.act()
		f.s.Now = f.s.Now.Add(tick)
	}

	// Moves (the generated cases reach the bound): a hand-off and its
	// placement, once more when a quota shrinks as a worker is judged stuck,
	// and once per verdict given or ended or probation ended (a quota that
	// shrinks or grows again).
	for id, k := range moves {
		if k > 4+verdicts {
			return fmt.Errorf("shard %s moved %d times (%d verdicts given or ended)", id, k, verdicts)
		}
	}
	return checkBalance(f.s)
}

// resting reports whether d changes nothing and wakes, if at all, only for
// the end of a stuck verdict (no member's key records a wait): a fleet
// with a stuck worker is at rest between its verdicts.
func resting(s State, d Decision) bool {
	if len(d.Assign) != 0 || len(d.Delete) != 0 || len(d.Moves) != 0 {
		return false
	}
	for _, a := range s.Assigned {
		if a.Waiting > 0 {
			return false
		}
	}
	return true
}

// checkBalance checks a fleet at rest: members not stuck hold between the
// floor and the ceiling of their weighted share of what stuck members do
// not hold (draining members none, unless all of them drain), stuck members
// at most the ceiling of their share of everything, and every shard is
// held, unless every member is stuck: then they keep what they hold, as
// nobody could take it.
func checkBalance(s State) error {
	counts := map[string]int64{}
	for _, h := range s.Holders {
		if h != "" {
			counts[h]++
		}
	}
	isStuck := func(m Member) bool { // or on probation: a quota of its own too
		a := s.Assigned[m.ID]
		return (a.Stuck || a.Verdicts > 0) && a.StuckSession == m.Session
	}
	weight := func(m Member, drainIgnored bool) int64 {
		switch {
		case m.Draining && !drainIgnored:
			return 0
		case m.Weight <= 0:
			return 1
		}
		return int64(m.Weight)
	}
	share := func(n, w, total int64) (int64, int64) {
		q, r := new(big.Int).QuoRem(big.NewInt(n*w), big.NewInt(total), new(big.Int))
		if r.Sign() > 0 {
			return q.Int64(), q.Int64() + 1
		}
		return q.Int64(), q.Int64()
	}
	allDrain, othersDrain := true, true
	var all, others, held, stuckHeld int64
	for _, m := range s.Members {
		allDrain = allDrain && m.Draining
		if !isStuck(m) {
			othersDrain = othersDrain && m.Draining
		}
	}
	for _, m := range s.Members {
		all += weight(m, allDrain)
		held += counts[m.ID]
		if isStuck(m) {
			stuckHeld += counts[m.ID]
		} else {
			others += weight(m, othersDrain)
		}
	}
	n := int64(len(s.Shards))
	if others > 0 && held != n {
		return fmt.Errorf("at rest %d of %d shards held", held, n)
	}
	for _, m := range s.Members {
		c := counts[m.ID]
		if isStuck(m) {
			if _, hi := share(n, weight(m, allDrain), all); c > hi && others > 0 {
				return fmt.Errorf("stuck %q holds %d, above ⌈share⌉ %d", m.ID, c, hi)
			}
			continue
		}
		if lo, hi := share(n-stuckHeld, weight(m, othersDrain), others); c < lo || c > hi {
			return fmt.Errorf("%q (weight %d, draining %v) holds %d of %d, share allows %d..%d",
				m.ID, m.Weight, m.Draining, c, n-stuckHeld, lo, hi)
		}
	}
	return nil
}

// TestStepJoinLeave starts from a fleet of equal weights at rest and checks
// the movement of a join (⌊N/(W+1)⌋ or ⌈N/(W+1)⌉ shards, every one handed
// off to the joiner and placed with it, in waves of the cap) and of a leave
// (exactly the leaver's shards, placed as orphans, nothing handed off).
func TestStepJoinLeave(t *testing.T) {
	forCases(t, stepCasesFrom+stepCases+stepSimCases, stepJoinLeaves, func(t *testing.T, i int, r *rand.Rand) {
		w, n := 1+r.IntN(64), shardCount(r)
		var p Policy
		if r.IntN(3) == 0 {
			p.MaxMovesInFlight = 1 + r.IntN(4)
		}
		check := func(s State, d Decision) error { return checkDecision(s, p, d) }
		f := newFleet(r, w, n)
		if _, _, err := f.settle(p, 100*time.Millisecond, 10, check); err != nil {
			t.Fatalf("case %d: cold start: %v", i, err)
		}
		if err := checkBalance(f.s); err != nil {
			t.Fatalf("case %d: cold start: %v", i, err)
		}
		base := f.snapshot()

		// Join.
		f.join(Member{ID: "joiner", Weight: 1})
		capMoves := p.MaxMovesInFlight
		if capMoves <= 0 {
			capMoves = DefaultMaxMovesInFlight(n, w+1)
		}
		lo, hi := n/(w+1), (n+w)/(w+1)
		rounds, moves, err := f.settle(p, 100*time.Millisecond, 2*(hi/capMoves+1)+4, check)
		if err != nil {
			t.Fatalf("case %d: join of %d shards, %d members: %v", i, n, w, err)
		}
		changed := 0
		for k, s := range f.s.Shards { // base has the same shards, in the same order
			if f.s.Holders[k] != base.Holders[k] {
				changed++
				if f.s.Holders[k] != "joiner" {
					t.Fatalf("case %d: join moved %s from %s to %s", i, s, base.Holders[k], f.s.Holders[k])
				}
			}
		}
		if changed < lo || changed > hi || len(moves) != 2*changed {
			t.Fatalf("case %d: join of %d shards, %d members moved %d in %d rounds (want %d..%d), moves %v",
				i, n, w, changed, rounds, lo, hi, moves)
		}
		for _, mv := range moves {
			if mv.To != "joiner" || (mv.From == "") != (mv.Reason == shard.ReasonFree) || (mv.From != "" && mv.Reason != shard.ReasonRebalance) {
				t.Fatalf("case %d: join move %+v", i, mv)
			}
		}
		if err := checkBalance(f.s); err != nil {
			t.Fatalf("case %d: after the join: %v", i, err)
		}

		if w == 1 {
			return
		}
		// Leave: from the fleet before the join.
		f.s = base
		f.s = f.snapshot() // base stays as it was
		leaver := base.Members[r.IntN(w)].ID
		f.leave(leaver)
		held := 0
		for _, h := range base.Holders {
			if h == leaver {
				held++
			}
		}
		_, moves, err = f.settle(p, 100*time.Millisecond, 4, check)
		if err != nil {
			t.Fatalf("case %d: leave: %v", i, err)
		}
		if len(moves) != held {
			t.Fatalf("case %d: leave of %s (held %d) made moves %v", i, leaver, held, moves)
		}
		was := holderMap(base)
		for _, mv := range moves {
			if was[mv.Shard] != leaver || mv.From != "" || mv.Reason != shard.ReasonOrphaned {
				t.Fatalf("case %d: leave of %s: move %+v", i, leaver, mv)
			}
		}
		for k, s := range f.s.Shards {
			if base.Holders[k] != leaver && f.s.Holders[k] != base.Holders[k] {
				t.Fatalf("case %d: leave of %s moved %s from %s", i, leaver, s, base.Holders[k])
			}
		}
		if err := checkBalance(f.s); err != nil {
			t.Fatalf("case %d: after the leave: %v", i, err)
		}
	})
}
