package rebalance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// Seed for the generated cases. Case i uses PCG(seed, i), so a failure
// names a case that can be replayed alone.
const seed = 0x5eed_ba1a_0ce

// Each generated test checks its own range of case numbers, so that no
// two check the same cases: TestStepKeepsWhatItHolds from 0, the other
// Step tests from stepCasesFrom on, each after the one before. The numbers
// between are unused; moving stepCasesFrom would change every case the
// tests' bounds were measured on.
const stepCasesFrom = 12_000

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

// genFleet draws a fleet of w members and n shards, and the holder of
// each shard ("" for none): members with equal, random or non-positive
// weights, sometimes draining (occasionally all of them), and holders that
// mix free shards, dead holders and skewed live holders (so some are far
// over their quota).
func genFleet(r *rand.Rand, w, n int) ([]Member, []shard.ID, []string) {
	ms, shards := genMembers(r, w), genShards(r, n)
	switch r.IntN(4) {
	case 0: // all weight 1
	case 1: // all the same weight, possibly ≤ 0 (treated as 1)
		k := r.IntN(10) - 3
		for i := range ms {
			ms[i].Weight = k
		}
	default:
		for i := range ms {
			ms[i].Weight = r.IntN(12) - 1
		}
	}
	switch r.IntN(20) {
	case 0:
		for i := range ms {
			ms[i].Draining = true
		}
	case 1, 2, 3:
		for i := range ms {
			ms[i].Draining = r.IntN(4) == 0
		}
	}

	holders := make([]string, n)
	pFree, pDead := r.Float64(), r.Float64()*0.3
	hog := r.IntN(w) // a member that holds far more than its share
	pHog := r.Float64() * r.Float64()
	for i := range shards {
		switch u := r.Float64(); {
		case u < pFree/2:
			// free
		case u < pFree/2+pDead:
			holders[i] = fmt.Sprintf("dead-%d", r.IntN(3))
		case u < pFree/2+pDead+0.01:
			// free as well; a case apart so that the draws stay the same
		case r.Float64() < pHog:
			holders[i] = ms[hog].ID
		default:
			holders[i] = ms[r.IntN(w)].ID
		}
	}
	_ = r.IntN(4) // a draw that keeps the cases the ones the bounds were measured on
	return ms, shards, holders
}
