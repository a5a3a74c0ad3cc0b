package rebalance

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// stepShedCases is how many fleets TestStepShedsLowestScores draws.
const stepShedCases = 2_000

// TestStepQuotas brings hand-worked fleets to rest (every worker follows
// its key) and checks what each member holds then, and how many shards
// changed hands on the way: quotas by weight with the largest remainder,
// weights ≤ 0 counted as 1 and huge ones clamped, draining members at 0
// unless all drain, and the rounding slots going to the members that
// would otherwise have to shed.
func TestStepQuotas(t *testing.T) {
	weighted := func(ws ...int) []Member {
		ms := make([]Member, len(ws))
		for i, w := range ws {
			ms[i] = Member{ID: string(rune('a' + i)), Weight: w}
		}
		return ms
	}
	draining := func(ms []Member, ids ...string) []Member {
		for i := range ms {
			ms[i].Draining = slices.Contains(ids, ms[i].ID)
		}
		return ms
	}
	tests := []struct {
		name    string
		n       int
		members []Member
		holders []string // by shard; "" free; keys list what each holds
		counts  map[string]int
		moved   int    // shards whose holder at rest differs from the start
		to      string // if set, the member every moved shard went to
	}{
		{name: "weights split exactly", n: 6, members: weighted(1, 2, 3),
			counts: map[string]int{"a": 1, "b": 2, "c": 3}, moved: 6},
		{name: "weights ≤ 0 count as 1", n: 4, members: weighted(0, -7),
			counts: map[string]int{"a": 2, "b": 2}, moved: 4},
		{name: "huge weights are clamped, not overflowed", n: 9, members: weighted(math.MaxInt, math.MaxInt, math.MaxInt, 1),
			// Unclamped, the weights' sum overflows. Clamped to 2³², the shares are
			// 9·2³²/(3·2³²+1) ≈ 2.99 three times and ≈ 0: a, b and c round up.
			counts: map[string]int{"a": 3, "b": 3, "c": 3, "d": 0}, moved: 9},
		{name: "balanced: nothing moves", n: 6, members: members("a", "b", "c"),
			holders: []string{"a", "b", "c", "a", "b", "c"},
			counts:  map[string]int{"a": 2, "b": 2, "c": 2}},
		{name: "the +1 goes to the member that would otherwise shed", n: 5, members: members("a", "b"),
			holders: []string{"a", "a", "a", "b", "b"},
			counts:  map[string]int{"a": 3, "b": 2}},
		{name: "the +1 goes to the member that would otherwise shed, the other one", n: 5, members: members("a", "b"),
			// Both ways round, so that the tie-break by ID hash cannot pass for the rule.
			holders: []string{"a", "a", "b", "b", "b"},
			counts:  map[string]int{"a": 2, "b": 3}},
		{name: "a leave moves only the leaver's shards", n: 6, members: members("a", "b"),
			holders: []string{"a", "b", "c", "a", "b", "c"},
			counts:  map[string]int{"a": 3, "b": 3}, moved: 2},
		{name: "a join moves only what the joiner receives", n: 4, members: members("a", "b", "c"),
			holders: []string{"a", "a", "b", "b"}, moved: 1, to: "c"},
		{name: "a draining member hands everything off", n: 3, members: draining(weighted(1, 1), "a"),
			holders: []string{"a", "a", "b"},
			counts:  map[string]int{"a": 0, "b": 3}, moved: 2, to: "b"},
		{name: "when every member drains, draining is ignored", n: 4, members: draining(weighted(1, 1), "a", "b"),
			holders: []string{"a", "a", "b", "b"},
			counts:  map[string]int{"a": 2, "b": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := State{Now: epoch, Shards: ids(tt.n), Holders: make([]string, tt.n), Assigned: map[string]Assignment{}}
			for _, m := range tt.members {
				m.Session = shard.SessionID(m.ID + "#1")
				s.Members = append(s.Members, m)
			}
			copy(s.Holders, tt.holders)
			for i, h := range s.Holders {
				if h != "" {
					s.Assigned[h] = Assignment{Shards: append(s.Assigned[h].Shards, s.Shards[i]), Since: epoch}
				}
			}
			start := slices.Clone(s.Holders)
			f := &fleet{s: s, kinds: map[string]behavior{}, r: rand.New(rand.NewPCG(27, 4))}
			check := func(s State, d Decision) error { return checkDecision(s, Policy{}, d) }
			if _, _, err := f.settle(Policy{}, 100*time.Millisecond, 20, check); err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for _, m := range tt.members {
				counts[m.ID] = 0
			}
			moved := 0
			for i, h := range f.s.Holders {
				counts[h]++
				if h != start[i] {
					moved++
					if tt.to != "" && h != tt.to {
						t.Errorf("%s moved from %q to %q, want to %q", s.Shards[i], start[i], h, tt.to)
					}
				}
			}
			if tt.counts != nil && !maps.Equal(counts, tt.counts) {
				t.Errorf("at rest counts %v, want %v", counts, tt.counts)
			}
			if moved != tt.moved {
				t.Errorf("%d shards moved, want %d: %v to %v", moved, tt.moved, start, f.s.Holders)
			}
		})
	}
}

// TestStepShedsLowestScores: a member over its quota keeps its
// highest-scoring shards and hands off the rest.
func TestStepShedsLowestScores(t *testing.T) {
	s := ids(8)
	st := State{Now: epoch, Shards: s, Members: live("a", "b"), Holders: slices.Repeat([]string{"a"}, 8),
		Assigned: map[string]Assignment{"a": key(s, 0, 1, 2, 3, 4, 5, 6, 7)}}
	d := mustStep(t, st, Policy{MaxMovesInFlight: 8})
	var sc scorer
	byScore := slices.Clone(s)
	slices.SortFunc(byScore, func(x, y shard.ID) int { return cmp.Compare(sc.score(y, "a"), sc.score(x, "a")) })
	var shed []shard.ID
	for _, mv := range d.Moves {
		shed = append(shed, mv.Shard)
	}
	if want := slices.Sorted(slices.Values(byScore[4:])); !slices.Equal(shed, want) {
		t.Errorf("a hands off %v, want its four lowest-scoring shards %v", shed, want)
	}
}

// TestStepKeepsWhatItHolds draws fleets as TestStepInvariants does
// (weights of every kind, draining members, skewed holders, dead holders
// and free shards), each key listing exactly what its member holds, and
// checks one step: each member hands off at most what lifts it above the
// floor of its weighted share, only shards among its lowest-scoring, and,
// with no cap on hand-offs, exactly its lowest-scoring ones, enough to
// bring it down to the ceiling of its share.
func TestStepKeepsWhatItHolds(t *testing.T) {
	forCases(t, 0, stepShedCases, func(t *testing.T, i int, r *rand.Rand) {
		w, n := 1+r.IntN(64), shardCount(r)
		members, shards, holders := genFleet(r, w, n)
		s := State{Now: epoch, Shards: shards, Members: members, Holders: holders, Assigned: map[string]Assignment{}}
		held := map[string][]shard.ID{}
		for _, m := range s.Members {
			held[m.ID] = nil
		}
		for i, h := range s.Holders {
			if _, ok := held[h]; ok {
				held[h] = append(held[h], s.Shards[i])
			}
		}
		for k, m := range s.Members {
			s.Members[k].Session = shard.SessionID(m.ID + "#1")
			if len(held[m.ID]) > 0 {
				s.Assigned[m.ID] = Assignment{Shards: slices.Sorted(slices.Values(held[m.ID])), Since: epoch}
			}
		}
		uncapped := r.IntN(2) == 0
		p := Policy{MaxMovesInFlight: n + 1}
		if !uncapped {
			p.MaxMovesInFlight = r.IntN(9) // 0: the default
		}
		d, err := Step(s, p)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := checkKeeps(s, d, uncapped); err != nil {
			t.Fatalf("case %d (%d shards, %d members, cap %d): %v", i, n, w, p.MaxMovesInFlight, err)
		}
	})
}

// checkKeeps checks TestStepKeepsWhatItHolds's decision d on s.
func checkKeeps(s State, d Decision, uncapped bool) error {
	allDrain := true
	for _, m := range s.Members {
		allDrain = allDrain && m.Draining
	}
	weight := func(m Member) int {
		switch {
		case m.Draining && !allDrain:
			return 0
		case m.Weight <= 0:
			return 1
		}
		return m.Weight
	}
	total := 0
	for _, m := range s.Members {
		total += weight(m)
	}
	shed := map[string]map[shard.ID]bool{}
	for _, mv := range d.Moves {
		if mv.From != "" {
			if shed[mv.From] == nil {
				shed[mv.From] = map[shard.ID]bool{}
			}
			shed[mv.From][mv.Shard] = true
		}
	}
	var sc scorer
	for _, m := range s.Members {
		mine := slices.Clone(s.Assigned[m.ID].Shards)
		slices.SortFunc(mine, func(x, y shard.ID) int { return cmp.Compare(sc.score(x, m.ID), sc.score(y, m.ID)) })
		lo := len(s.Shards) * weight(m) / total
		hi := (len(s.Shards)*weight(m) + total - 1) / total
		gives := len(shed[m.ID])
		if gives > max(0, len(mine)-lo) {
			return fmt.Errorf("%q (weight %d, draining %v) holds %d, share ≥ %d, hands off %d",
				m.ID, m.Weight, m.Draining, len(mine), lo, gives)
		}
		if uncapped && gives < len(mine)-hi {
			return fmt.Errorf("%q holds %d, share ≤ %d, hands off only %d with no cap", m.ID, len(mine), hi, gives)
		}
		lowest := len(mine) - lo
		if uncapped {
			lowest = gives
		}
		for id := range shed[m.ID] {
			if k := slices.Index(mine, id); k >= lowest {
				return fmt.Errorf("%q hands off %s, which ranks %d of its %d by score (lowest first), not among the %d lowest",
					m.ID, id, k+1, len(mine), lowest)
			}
		}
	}
	return nil
}
