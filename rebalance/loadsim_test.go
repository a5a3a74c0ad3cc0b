package rebalance

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// runLoad steps, applies and acts rounds times, a tick each, with the
// loads given by loads(round); it returns the load moves made.
func runLoad(t *testing.T, f *fleet, p Policy, rounds int, tick time.Duration, loads func(round int) map[shard.ID]float64) (moves []Transfer) {
	t.Helper()
	for round := range rounds {
		f.s.Loads = loads(round)
		d, err := f.step(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkDecision(f.s, p, d); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, mv := range d.Moves {
			if mv.Reason == shard.ReasonLoad {
				moves = append(moves, mv)
			}
		}
		f.apply(d)
		f.act()
		f.s.Now = f.s.Now.Add(tick)
	}
	return moves
}

// noisy returns base with every load times 1 ± 0.2, uniformly.
func noisy(r *rand.Rand, base map[shard.ID]float64) map[shard.ID]float64 {
	out := make(map[shard.ID]float64, len(base))
	for _, id := range slices.Sorted(func(yield func(shard.ID) bool) {
		for id := range base {
			if !yield(id) {
				return
			}
		}
	}) {
		out[id] = base[id] * (1 + 0.4*(r.Float64()-0.5))
	}
	return out
}

// smoothed returns the loads a worker would report for raw, given what it
// reported a second earlier: an exponentially weighted mean with a
// half-life of 10 s (worker.DefaultLoadHalfLife), advanced by one second.
func smoothed(prev, raw map[shard.ID]float64) map[shard.ID]float64 {
	decay := math.Exp2(-1.0 / 10)
	out := make(map[shard.ID]float64, len(raw))
	for id, l := range raw {
		out[id] = prev[id]*decay + l*(1-decay)
	}
	return out
}

// loadFigures are one seed's results of the skewed-load scenario on the
// step alone.
type loadFigures struct {
	rest         int     // rounds until the fleet is at rest (no change, every key held)
	band         int     // rounds until the band first holds with every key held (-1: not before rest)
	inBand       bool    // at rest, every member not pinned is inside the band
	maxRaw, hi   float64 // at rest: max ratio ÷ mean, max ratio ÷ adjusted mean of those not pinned
	lo           float64 // at rest: min ratio ÷ adjusted mean of those not pinned
	noiseMoves   int     // load moves in 10 minutes of ±20 % noise, as reported (smoothed)
	rawMoves     int     // the same with the noise reported unsmoothed
	hotBack      int     // seconds until the band holds again after the hot shard tripled (-1: not within 2 min)
	hotReachable bool    // the band held before the tripling
}

// skewedLoad plays issue 17's scenario on Step with a simulated fleet
// stepping once a second: count-balanced, then loads from dist; at rest,
// 10 minutes of ±20 % noise every 10 s (smoothed as a worker reports it,
// and separately raw); and, from rest 5 minutes on, the hot shard (the
// heaviest whose tripled load stays under a member's mean) tripled.
func skewedLoad(t *testing.T, seed uint64, dist func(*rand.Rand, []shard.ID, float64) map[shard.ID]float64) loadFigures {
	var fig loadFigures
	r := rand.New(rand.NewPCG(17, seed))
	f := newFleet(r, 12, 128)
	if _, _, err := f.settle(Policy{}, time.Second, 20, nil); err != nil {
		t.Fatal(err)
	}
	base := dist(r, f.s.Shards, 1.1)
	p := Policy{Load: LoadPolicy{Tolerance: 0.10}}
	fig.rest, fig.band = -1, -1
	for round := range 120 {
		if _, hi, lo := viewLoads(f.s).worst(); f.s.Loads != nil && fig.band < 0 && hi <= 1.10 && lo >= 0.90 && f.settled() {
			fig.band = round
		}
		d, err := f.step(p)
		if err != nil {
			t.Fatal(err)
		}
		if quiet(d) && f.settled() && f.s.Loads != nil {
			fig.rest = round
			break
		}
		f.s.Loads = base
		runLoad(t, f, p, 1, time.Second, func(int) map[shard.ID]float64 { return base })
	}
	if fig.rest < 0 {
		t.Fatalf("seed %d: not at rest after 120 rounds", seed)
	}
	fig.maxRaw, fig.hi, fig.lo = viewLoads(f.s).worst()
	fig.inBand = fig.hi <= 1.10 && fig.lo >= 0.90

	at := f.snapshot()
	for _, raw := range []bool{false, true} {
		f.s = at
		f.s = f.snapshot()
		noisyRng := rand.New(rand.NewPCG(18, seed))
		cur, rep := base, base
		moves := runLoad(t, f, p, 600, time.Second, func(round int) map[shard.ID]float64 {
			if round%10 == 0 {
				cur = noisy(noisyRng, base)
			}
			if raw {
				return cur
			}
			rep = smoothed(rep, cur)
			return rep
		})
		if raw {
			fig.rawMoves = len(moves)
		} else {
			fig.noiseMoves = len(moves)
		}
	}

	// The hot shard tripled, from rest five minutes on (as in the scenario,
	// past every residence), loads smoothed as reported.
	f.s = at
	f.s = f.snapshot()
	f.s.Now = f.s.Now.Add(5 * time.Minute)
	hot, mean := shard.ID(""), 128.0/12
	var total float64
	for _, l := range base {
		total += l
	}
	mean = total / 12
	for _, id := range f.s.Shards {
		if 3*base[id] < mean && (hot == "" || base[id] > base[hot]) {
			hot = id
		}
	}
	hotLoads := maps.Clone(base)
	hotLoads[hot] *= 3
	fig.hotReachable, fig.hotBack = fig.inBand, -1
	rep := base
	if now := f.snapshot(); true {
		now.Loads = hotLoads
		if _, hi, lo := viewLoads(now).worst(); hi <= 1.10 && lo >= 0.90 {
			fig.hotBack = 0 // the tripling left the band holding
			return fig
		}
	}
	for second := range 120 {
		runLoad(t, f, p, 1, time.Second, func(int) map[shard.ID]float64 {
			rep = smoothed(rep, hotLoads)
			return rep
		})
		now := f.s
		now.Loads = hotLoads
		if _, hi, lo := viewLoads(now).worst(); hi <= 1.10 && lo >= 0.90 && f.settled() {
			fig.hotBack = second + 1
			break
		}
	}
	return fig
}

// TestStepLoadConverges is issue 17's scenario on the step alone: 12
// members × 128 shards, count-balanced, then Zipf(1.1) loads, two ways:
// "ranks" (the k-th heaviest carries 1/k^1.1, shardbench's skewed-load:
// the heaviest shard alone is 2.8 × a member's mean, so the band can only
// hold for the members it does not pin) and "draws" (each shard's load a
// Zipf draw: heavy-tailed, no shard above a member's mean). The fleet
// steps once a second (a hand-off takes two rounds). Figures are logged
// with -v. The test fails if the fleet does not come to rest within 90
// rounds (a residence of 60 s may hold a last wave back), if the band
// does not hold within 90 rounds where it holds at rest, if at rest a
// member is outside 0.85..2.1 of the band's centre (a pinned one counted
// by what it holds besides its lump), if the band holds at rest, or holds
// within 30 rounds, for fewer seeds than the step reached when this was
// written (ranks 8 and 7 of 10, draws 5 and 5), if
// 10 minutes of ±20 % noise, as a worker reports it (smoothed), make more
// than 2 load moves a minute, or if, with ranks, a tripled hot shard is
// not back inside the band within 35 s, where the band held before, for
// all seeds but two (issue 17 asks 30 s of the whole system).
func TestStepLoadConverges(t *testing.T) {
	// Single moves (and a lump with the moves that follow it) cannot
	// always pack lumpy loads into the band; these are what they reach.
	wantInBand := map[string]int{"ranks": 8, "draws": 5}
	wantSoon := map[string]int{"ranks": 7, "draws": 5} // within 30 rounds: a residence can hold a last wave back a minute
	for _, tc := range []struct {
		name  string
		loads func(*rand.Rand, []shard.ID, float64) map[shard.ID]float64
	}{{"ranks", zipfRanks}, {"draws", zipfDraws}} {
		t.Run(tc.name, func(t *testing.T) {
			var worstRest, worstBand, within30, noise, raw, inBand, hotWorst, hotSeeds, hotSoon int
			var worstHi, worstLo = 0.0, 2.0
			const seeds = 10
			for seed := range uint64(seeds) {
				fig := skewedLoad(t, seed, tc.loads)
				t.Logf("seed %d: in the band after %d rounds, at rest after %d, in band at rest %v (max/mean %.3f; not pinned %.3f..%.3f of their mean); "+
					"load moves in 10 min of noise: %d smoothed, %d raw; hot shard tripled: back in the band after %d s",
					seed, fig.band, fig.rest, fig.inBand, fig.maxRaw, fig.lo, fig.hi, fig.noiseMoves, fig.rawMoves, fig.hotBack)
				worstRest = max(worstRest, fig.rest)
				if fig.inBand {
					worstBand = max(worstBand, fig.band)
				}
				if fig.band >= 0 && fig.band <= 30 {
					within30++
				}
				worstHi, worstLo = max(worstHi, fig.hi), min(worstLo, fig.lo)
				noise += fig.noiseMoves
				raw += fig.rawMoves
				if fig.inBand {
					inBand++
				}
				if fig.hotReachable {
					hotSeeds++
					if fig.hotBack < 0 {
						hotWorst = 1 << 30
					} else if fig.hotBack <= 35 {
						hotSoon++
					}
					hotWorst = max(hotWorst, fig.hotBack)
				}
			}
			perMin, rawPerMin := float64(noise)/seeds/10, float64(raw)/seeds/10
			t.Logf("%s: in the band %d/%d (%d within 30 rounds), within %d rounds; at rest within %d rounds; not pinned %.3f..%.3f of their mean; "+
				"%.2f load moves a minute under noise as reported (%.2f raw); hot shard back in the band within %d s (%d of %d within 35 s)",
				tc.name, inBand, seeds, within30, worstBand, worstRest, worstLo, worstHi, perMin, rawPerMin, hotWorst, hotSoon, hotSeeds)
			switch {
			case worstRest > 90: // the residence (60 s) may hold a last wave back
				t.Errorf("at rest only after %d rounds, want ≤ 90", worstRest)
			case worstBand > 90:
				t.Errorf("in the band only after %d rounds, want ≤ 90", worstBand)
			case worstHi > 2.1 || worstLo < 0.85:
				t.Errorf("at rest a member is at %.3f..%.3f of the mean, want within 0.85..2.1", worstLo, worstHi)
			case inBand < wantInBand[tc.name] || within30 < wantSoon[tc.name]:
				t.Errorf("the band holds at rest for %d of %d seeds, %d within 30 rounds; want ≥ %d, ≥ %d",
					inBand, seeds, within30, wantInBand[tc.name], wantSoon[tc.name])
			case perMin > 2:
				t.Errorf("%.2f load moves a minute under noise, want ≤ 2", perMin)
			case tc.name == "ranks" && hotSoon < hotSeeds-2:
				// Issue 17's goal is 30 s; the patience (10 s) and the
				// reports' smoothing (half-life 10 s) take most of it, and
				// a first correction made on a load still rising can leave
				// a second one to wait for the residence of the first.
				t.Errorf("a tripled hot shard is back in the band within 35 s for %d of %d seeds, want all but 2", hotSoon, hotSeeds)
			}
		})
	}
}
