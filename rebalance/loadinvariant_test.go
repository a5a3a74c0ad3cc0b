package rebalance

import (
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// exercised fails t, once its parallel cases are done, when they counted
// fewer than want: the properties would have held vacuously.
func exercised(t *testing.T, what string, n *atomic.Int64, want int64) {
	t.Cleanup(func() {
		t.Logf("%d %s", n.Load(), what)
		if n.Load() < want {
			t.Errorf("the generated cases made %d %s, want ≥ %d", n.Load(), what, want)
		}
	})
}

// loadCases continue after the other Step cases' numbers.
const loadCases = 2_000

// genLoads draws a load for most shards of s (heavy-tailed, some zero,
// some missing, a few for shards outside the set), arrival times in the
// keys (some inside the residence, some past it, some in the future) and
// out-of-band marks, and a load policy (defaults or small values).
func genLoads(r *rand.Rand, s State, p Policy) (State, Policy) {
	s.Loads = map[shard.ID]float64{}
	pMissing := r.Float64() * 0.3
	for _, id := range s.Shards {
		switch u := r.Float64(); {
		case u < pMissing:
		case u < pMissing+0.05:
			s.Loads[id] = 0
		default:
			s.Loads[id] = math.Pow(r.Float64(), -0.8) // heavy-tailed, ≥ 1
		}
	}
	s.Loads["not-a-shard"] = 5
	if r.IntN(2) == 0 { // every live member's key lists what it holds, nothing else: no hand-off in flight
		clean := map[string]Assignment{}
		for _, m := range s.Members {
			clean[m.ID] = Assignment{Since: s.Assigned[m.ID].Since}
		}
		for i, id := range s.Shards {
			if a, ok := clean[s.Holders[i]]; ok {
				a.Shards = append(a.Shards, id)
				clean[s.Holders[i]] = a
			}
		}
		s.Assigned = clean
	}
	assigned := make(map[string]Assignment, len(s.Assigned))
	for _, w := range slices.Sorted(maps.Keys(s.Assigned)) { // in order: a case replays alone
		a := s.Assigned[w]
		if r.IntN(2) == 0 {
			a.Arrived = map[shard.ID]time.Time{}
			for _, id := range a.Shards {
				if r.IntN(3) == 0 {
					a.Arrived[id] = s.Now.Add(time.Duration(r.IntN(150)-120) * time.Second)
				}
			}
		}
		if r.IntN(4) != 0 {
			a.OutOfBand = s.Now.Add(time.Duration(r.IntN(70)-60) * time.Second)
		}
		assigned[w] = a
	}
	s.Assigned = assigned
	for k := range s.Members {
		s.Members[k].Weight = 1 + r.IntN(4)*r.IntN(2)
		s.Members[k].Cordoned = r.IntN(8) == 0
	}
	s.Frozen = r.IntN(10) == 0
	if r.IntN(2) == 0 {
		p.Load = LoadPolicy{Tolerance: 0.02 + r.Float64()*0.3, MinResidence: time.Duration(r.IntN(90)) * time.Second,
			MinGain: r.Float64() * 0.05, Patience: time.Duration(r.IntN(20)) * time.Second}
	}
	return s, p
}

// corrected reports whether member w is being corrected in decision d:
// its key (as d writes it, or as it was) marks it outside the band for at
// least Patience.
func corrected(s State, d Decision, p Policy, w string) bool {
	a, ok := d.Assign[w]
	if !ok {
		a = s.Assigned[w]
	}
	return !a.OutOfBand.IsZero() && !a.OutOfBand.Add(p.Load.withDefaults().Patience).After(s.Now)
}

// TestStepLoadInvariants checks, over generated states with loads, every
// guarantee of a decision (checkDecision), that the order of the input
// does not matter, and that a written decision is a fixed point; that a
// load move starts only from a member neither draining nor cordoned, never
// for a shard inside its residence, never while the fleet is frozen; and
// that Loads nil, or the same load for every shard, decide exactly as
// count balance.
func TestStepLoadInvariants(t *testing.T) {
	var loadMovesSeen atomic.Int64
	exercised(t, "load moves", &loadMovesSeen, 200)
	forCases(t, stepCasesFrom+stepCases+stepSimCases+stepJoinLeaves+stepOpsCases, loadCases, func(t *testing.T, i int, r *rand.Rand) {
		w, n := 1+r.IntN(32), shardCount(r)
		s, p := genState(r, w, n)
		genStandbys(r, &s)
		p.Standbys = r.IntN(3)
		s, p = genLoads(r, s, p)
		d, err := Step(s, p)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		plain := s
		plain.Loads = nil
		dc, err := Step(plain, p)
		if err != nil {
			t.Fatal(err)
		}
		// Cordons can leave free shards in no key, which checkDecision
		// (written before cordons) calls a fault: what count balance
		// passes, load balance must.
		if err := checkDecision(s, p, d); err != nil && checkDecision(plain, p, dc) == nil {
			t.Fatalf("case %d (%d shards, %d members): %v", i, len(s.Shards), len(s.Members), err)
		}
		if d2, err := Step(shuffledState(r, s), p); err != nil || !sameDecision(d, d2) {
			t.Fatalf("case %d: shuffled state gave another decision (err %v)", i, err)
		}
		d3, err := Step(applied(s, d), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(d3.Assign) != 0 || len(d3.Moves) != 0 || len(d3.Delete) != 0 || !d3.Wake.Equal(d.Wake) {
			for w, a := range d3.Assign {
				t.Logf("%s: before %+v\n after %+v\n again %+v", w, s.Assigned[w], d.Assign[w], a)
			}
			t.Logf("preparing %v then %v", d.Preparing, d3.Preparing)
			t.Fatalf("case %d: the written decision is not a fixed point: keys %v, moves %v, wake %v then %v", i, slices.Sorted(maps.Keys(d3.Assign)), d3.Moves, d.Wake, d3.Wake)
		}
		residence := p.Load.withDefaults().MinResidence
		for _, mv := range d.Moves {
			if mv.Reason != shard.ReasonLoad {
				continue
			}
			loadMovesSeen.Add(1)
			if s.Frozen {
				t.Fatalf("case %d: load move %+v while frozen", i, mv)
			}
			// Residence yields only to a correction: the move's giver or
			// taker must be outside the band for Patience (far outside, in
			// fact; TestResidenceYieldsFarOutside checks how far).
			if at, ok := s.Assigned[mv.From].Arrived[mv.Shard]; ok && s.Now.Sub(at) < residence &&
				!corrected(s, d, p, mv.From) && !corrected(s, d, p, mv.To) {
				t.Fatalf("case %d: load move %+v of a shard that arrived at %v, residence %v, now %v, neither member corrected", i, mv, at, residence, s.Now)
			}
		}

		// Uniform loads are count balance: the same decision as no loads.
		same := s
		same.Loads = map[shard.ID]float64{}
		l := r.Float64() * 10
		for _, id := range s.Shards {
			if r.IntN(4) != 0 {
				same.Loads[id] = l
			}
		}
		if du, err := Step(same, p); err != nil || !sameDecision(dc, du) || du.ByLoad {
			t.Fatalf("case %d: loads all %v decided otherwise than count balance (err %v):\n%+v\n%+v", i, l, err, dc, du)
		}
	})
}

// TestStepLoadNeverWidens: in a settled fleet (every shard held and in its
// holder's key), the load moves of one step, all applied, never widen the
// spread of load per capacity over the members that take part, and none
// is made while the band holds.
func TestStepLoadNeverWidens(t *testing.T) {
	var widenChecked atomic.Int64
	exercised(t, "load moves checked", &widenChecked, 200)
	forCases(t, stepCasesFrom+stepCases+stepSimCases+stepJoinLeaves+stepOpsCases+loadCases, loadCases/4, func(t *testing.T, i int, r *rand.Rand) {
		f := newFleet(r, 1+r.IntN(16), 1+r.IntN(300))
		for k := range f.s.Members {
			f.s.Members[k].Weight = 1 + r.IntN(3)
		}
		if _, _, err := f.settle(Policy{}, time.Second, 40, nil); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		f.s.Loads = map[shard.ID]float64{}
		for _, id := range f.s.Shards {
			f.s.Loads[id] = math.Pow(r.Float64(), -0.7)
		}
		p := Policy{Load: LoadPolicy{Patience: time.Nanosecond}}
		for k := range f.s.Members { // out of band long enough, if out
			a := f.s.Assigned[f.s.Members[k].ID]
			a.OutOfBand = f.s.Now.Add(-time.Minute)
			f.s.Assigned[f.s.Members[k].ID] = a
		}
		d, err := Step(f.s, p)
		if err != nil {
			t.Fatal(err)
		}
		before := spread(viewLoads(f.s))
		after := f.snapshot()
		moved := 0
		for _, mv := range d.Moves {
			if mv.Reason == shard.ReasonLoad {
				hold(&after, mv.Shard, mv.To)
				moved++
			}
		}
		v := viewLoads(f.s)
		inBand := true
		for m, ratio := range v.ratio {
			if !v.pinned[m] {
				inBand = inBand && math.Abs(ratio/v.adj-1) <= DefaultTolerance
			}
		}
		if got := spread(viewLoads(after)); got > before*(1+1e-9) {
			t.Fatalf("case %d: %d load moves widened the spread from %v to %v: %v", i, moved, before, got, d.Moves)
		}
		widenChecked.Add(int64(moved))
		if inBand && moved > 0 && len(v.pinned) == 0 {
			t.Fatalf("case %d: %d load moves while the band holds", i, moved)
		}
	})
}

// spread is max − min load per capacity.
func spread(v loadView) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range v.ratio {
		lo, hi = min(lo, r), max(hi, r)
	}
	return hi - lo
}

// TestStepInvalidLoads: a negative, NaN or infinite load is refused with
// ErrInvalidInput naming the shard and the value; a load for a shard
// outside the set is ignored.
func TestStepInvalidLoads(t *testing.T) {
	ids := shard.Config{Shards: 4}.IDs()
	for _, c := range []struct {
		load float64
		want string
	}{{-1, "-1"}, {math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}} {
		s := State{Now: epoch, Shards: ids, Members: live("a", "b"), Loads: map[shard.ID]float64{ids[0]: 1, ids[2]: c.load}}
		_, err := Step(s, Policy{})
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), string(ids[2])) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("load %v: %v, want ErrInvalidInput naming %s and %s", c.load, err, ids[2], c.want)
		}
	}
	s := State{Now: epoch, Shards: ids, Members: live("a", "b"), Loads: map[shard.ID]float64{ids[0]: 1, "elsewhere": -1}}
	if _, err := Step(s, Policy{}); err != nil {
		t.Errorf("a load outside the shard set: %v", err)
	}
}
