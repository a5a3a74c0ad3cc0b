package rebalance

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// Seed for the generated cases. Case i uses PCG(seed, i), so a failure
// names a case that can be replayed alone.
const seed = 0x5eed_ba1a_0ce

// Case counts. Shard counts are biased toward small fleets (cheap under
// -race) but every run includes fleets of up to 4096 shards.
const (
	invariantCases = 10_000
	joinLeaveCases = 2_000
)

func caseRand(i int) *rand.Rand { return rand.New(rand.NewPCG(seed, uint64(i))) }

// shardCount: 65% up to 64, 32.5% up to 512, 2.5% up to 4096, so that
// every run has a few hundred large fleets while -race stays affordable.
func shardCount(r *rand.Rand) int {
	switch u := r.IntN(40); {
	case u < 26:
		return 1 + r.IntN(64)
	case u < 39:
		return 1 + r.IntN(512)
	default:
		return 1 + r.IntN(4096)
	}
}

// forCases runs check on cases [from, from+count) in parallel chunks; each
// case draws from its own generator, so chunking does not change the cases.
func forCases(t *testing.T, from, count int, check func(t *testing.T, i int, r *rand.Rand)) {
	const chunk = 500
	for lo := 0; lo < count; lo += chunk {
		hi := min(lo+chunk, count)
		t.Run(fmt.Sprintf("cases-%d-%d", lo, hi-1), func(t *testing.T) {
			t.Parallel()
			for i := lo; i < hi; i++ {
				check(t, i, caseRand(from+i))
			}
		})
	}
}

// allShards are the IDs of a 4096-shard fleet, built once because
// formatting them per case would dominate the test's run time.
var allShards = shard.Config{Shards: 4096}.IDs()

// genShards returns n distinct shard IDs in random order.
func genShards(r *rand.Rand, n int) []shard.ID {
	ids := slices.Clone(allShards[:n])
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}

// genMembers returns w members with distinct, non-sequential IDs in random
// order, all of weight 1 and none draining.
func genMembers(r *rand.Rand, w int) []Member {
	ms := make([]Member, w)
	for i, k := range r.Perm(4 * w)[:w] {
		ms[i] = Member{ID: fmt.Sprintf("worker-%d", k), Weight: 1}
	}
	return ms
}

// genInput draws one snapshot of w members and n shards: members with equal, random or
// non-positive weights, sometimes draining (occasionally all of them), and
// a current ownership that mixes free shards, dead holders, skewed live
// holders (so some are far over capacity), empty holders, and entries for
// shards outside the set.
func genInput(r *rand.Rand, w, n int) Input {
	in := Input{
		Members: genMembers(r, w),
		Shards:  genShards(r, n),
		Owners:  map[shard.ID]string{},
	}
	switch r.IntN(4) {
	case 0: // all weight 1
	case 1: // all the same weight, possibly ≤ 0 (treated as 1)
		k := r.IntN(10) - 3
		for i := range in.Members {
			in.Members[i].Weight = k
		}
	default:
		for i := range in.Members {
			in.Members[i].Weight = r.IntN(12) - 1
		}
	}
	switch r.IntN(20) {
	case 0:
		for i := range in.Members {
			in.Members[i].Draining = true
		}
	case 1, 2, 3:
		for i := range in.Members {
			in.Members[i].Draining = r.IntN(4) == 0
		}
	}

	pFree, pDead := r.Float64(), r.Float64()*0.3
	hog := r.IntN(w) // a member that holds far more than its share
	pHog := r.Float64() * r.Float64()
	for _, s := range in.Shards {
		switch u := r.Float64(); {
		case u < pFree/2:
			// free: no entry
		case u < pFree/2+pDead:
			in.Owners[s] = fmt.Sprintf("dead-%d", r.IntN(3))
		case u < pFree/2+pDead+0.01:
			in.Owners[s] = ""
		case r.Float64() < pHog:
			in.Owners[s] = in.Members[hog].ID
		default:
			in.Owners[s] = in.Members[r.IntN(w)].ID
		}
	}
	if r.IntN(4) == 0 {
		in.Owners["not-a-shard"] = in.Members[0].ID
	}
	return in
}

// samePlan is reflect.DeepEqual for plans, at a fraction of the cost.
func samePlan(a, b Plan) bool {
	return maps.Equal(a.Target, b.Target) && maps.Equal(a.Capacity, b.Capacity) && slices.Equal(a.Moves, b.Moves)
}

func TestInvariants(t *testing.T) {
	forCases(t, 0, invariantCases, func(t *testing.T, i int, r *rand.Rand) {
		w, n := 1+r.IntN(64), shardCount(r)
		if i%1000 == 999 {
			w, n = 64, 4096 // the largest fleet, every time
		}
		in := genInput(r, w, n)
		p, err := Compute(in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := checkPlan(in, p); err != nil {
			t.Fatalf("case %d (%d shards, %d members): %v", i, len(in.Shards), len(in.Members), err)
		}

		// Determinism: another order of everything gives the same plan.
		p2, err := Compute(shuffled(in, r.Perm))
		if err != nil || !samePlan(p, p2) {
			t.Fatalf("case %d: shuffled input gave another plan (err %v)", i, err)
		}

		// Convergence: once applied, the plan is a fixed point.
		conv := converged(in, p)
		p3, err := Compute(conv)
		if err != nil || len(p3.Moves) != 0 || !maps.Equal(p.Target, p3.Target) {
			t.Fatalf("case %d: applied plan is not a fixed point: %d moves (err %v)", i, len(p3.Moves), err)
		}
	})
}

// TestJoinLeave starts from a converged assignment with equal weights and
// checks the movement bounds of a join and of a leave.
func TestJoinLeave(t *testing.T) {
	forCases(t, invariantCases, joinLeaveCases, func(t *testing.T, i int, r *rand.Rand) {
		w := 1 + r.IntN(64)
		start := Input{Members: genMembers(r, w), Shards: genShards(r, shardCount(r))}
		p0, err := Compute(start)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		base := converged(start, p0)
		n := len(base.Shards)

		// Join: at most ⌈N/(W+1)⌉ moves, every one a release to the joiner.
		join := base
		join.Members = append(slices.Clone(base.Members), Member{ID: "joiner", Weight: 1})
		pj, err := Compute(join)
		if err != nil {
			t.Fatalf("case %d join: %v", i, err)
		}
		if err := checkPlan(join, pj); err != nil {
			t.Fatalf("case %d join: %v", i, err)
		}
		if limit := (n + w) / (w + 1); len(pj.Moves) > limit {
			t.Fatalf("case %d: join of %d shards, %d members moved %d > %d", i, n, w, len(pj.Moves), limit)
		}
		for _, mv := range pj.Moves {
			if mv.To != "joiner" || mv.From == "" {
				t.Fatalf("case %d: join move %+v is not a hand-off to the joiner", i, mv)
			}
		}

		if w == 1 {
			return // a leave would leave no members
		}
		// Leave: only the leaver's shards move, and all of them do.
		k := r.IntN(w)
		leaver := base.Members[k].ID
		leave := base
		leave.Members = slices.Delete(slices.Clone(base.Members), k, k+1)
		pl, err := Compute(leave)
		if err != nil {
			t.Fatalf("case %d leave: %v", i, err)
		}
		if err := checkPlan(leave, pl); err != nil {
			t.Fatalf("case %d leave: %v", i, err)
		}
		if got, want := len(pl.Moves), p0.Capacity[leaver]; got != want {
			t.Fatalf("case %d: leave of %q (held %d) moved %d", i, leaver, want, got)
		}
		for _, mv := range pl.Moves {
			if base.Owners[mv.Shard] != leaver || mv.From != "" {
				t.Fatalf("case %d: leave of %q moved %+v", i, leaver, mv)
			}
		}
	})
}
