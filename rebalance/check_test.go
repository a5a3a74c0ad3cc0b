package rebalance

import (
	"fmt"
	"math/big"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// checkPlan verifies every per-plan invariant the package doc promises,
// recomputing what it needs from the input independently of the planner.
// It returns the first violation. It is O(N + W + moves) apart from For,
// which is checked against Moves once per member.
func checkPlan(in Input, p Plan) error {
	live := make(map[string]Member, len(in.Members))
	for _, m := range in.Members {
		live[m.ID] = m
	}
	n := len(in.Shards)
	if len(live) == 0 {
		if len(p.Target) != 0 || len(p.Capacity) != 0 || len(p.Moves) != 0 {
			return fmt.Errorf("no members but plan is %+v", p)
		}
		return nil
	}

	// Coverage: every shard exactly one live target, nothing else.
	if len(p.Target) != n {
		return fmt.Errorf("%d targets for %d shards", len(p.Target), n)
	}
	for _, s := range in.Shards {
		to, ok := p.Target[s]
		if !ok {
			return fmt.Errorf("shard %q has no target", s)
		}
		if _, ok := live[to]; !ok {
			return fmt.Errorf("shard %q targeted to %q, not a live member", s, to)
		}
	}

	// Capacity: one entry per member, summing to n, and filled exactly.
	if len(p.Capacity) != len(live) {
		return fmt.Errorf("%d capacities for %d members", len(p.Capacity), len(live))
	}
	counts := p.Counts()
	sum := 0
	for id, c := range p.Capacity {
		if _, ok := live[id]; !ok {
			return fmt.Errorf("capacity for non-member %q", id)
		}
		if counts[id] != c {
			return fmt.Errorf("member %q: %d targets, capacity %d", id, counts[id], c)
		}
		sum += c
	}
	if sum != n {
		return fmt.Errorf("capacities sum to %d, want %d", sum, n)
	}

	// Balance: count within one of the weighted share (floor or ceiling),
	// draining members at 0 unless all drain; equal weights spread ≤ 1.
	allDrain := true
	for _, m := range live {
		allDrain = allDrain && m.Draining
	}
	weight := func(m Member) int64 {
		switch {
		case m.Draining && !allDrain:
			return 0
		case m.Weight <= 0:
			return 1
		case uint64(m.Weight) > 1<<32:
			return 1 << 32
		}
		return int64(m.Weight)
	}
	total := new(big.Int)
	weights := map[int64]bool{}
	for _, m := range live {
		total.Add(total, big.NewInt(weight(m)))
		if weight(m) > 0 {
			weights[weight(m)] = true
		}
	}
	active := map[string]int{}
	for id, m := range live {
		if m.Draining && !allDrain && counts[id] != 0 {
			return fmt.Errorf("draining member %q targeted %d shards", id, counts[id])
		}
		// floor(n·w/Σw) ≤ count ≤ ceil(n·w/Σw)
		nw := new(big.Int).Mul(big.NewInt(int64(n)), big.NewInt(weight(m)))
		q, r := new(big.Int).QuoRem(nw, total, new(big.Int))
		lo, hi := q.Int64(), q.Int64()
		if r.Sign() > 0 {
			hi++
		}
		if c := int64(counts[id]); c < lo || c > hi {
			return fmt.Errorf("member %q (weight %d) has %d shards, share %d/%d·%d allows %d..%d",
				id, weight(m), c, n, total, weight(m), lo, hi)
		}
		if weight(m) > 0 {
			active[id] = counts[id]
		}
	}
	if len(weights) == 1 && Spread(active) > 1 {
		return fmt.Errorf("equal weights but spread %d: %v", Spread(active), active)
	}

	// Stickiness: each member keeps min(owned, capacity) of its shards, and
	// when it must shed some it keeps its highest-scoring ones.
	var sc scorer
	type keep struct {
		owned, kept      int
		minKept, maxShed uint64
		anyKept, anyShed bool
	}
	keeps := map[string]*keep{}
	for _, s := range in.Shards {
		o := in.Owners[s]
		if _, ok := live[o]; !ok {
			continue
		}
		k := keeps[o]
		if k == nil {
			k = &keep{}
			keeps[o] = k
		}
		k.owned++
		v := sc.score(s, o)
		if p.Target[s] == o {
			k.kept++
			if !k.anyKept || v < k.minKept {
				k.minKept, k.anyKept = v, true
			}
		} else if !k.anyShed || v > k.maxShed {
			k.maxShed, k.anyShed = v, true
		}
	}
	for id, k := range keeps {
		if want := min(k.owned, p.Capacity[id]); k.kept != want {
			return fmt.Errorf("member %q owns %d, capacity %d, keeps %d, want %d",
				id, k.owned, p.Capacity[id], k.kept, want)
		}
		if k.anyKept && k.anyShed && k.maxShed > k.minKept {
			return fmt.Errorf("member %q sheds a shard scoring higher than one it keeps", id)
		}
	}

	// Moves: exactly the shards whose target differs from the live holder,
	// sorted, with the right From and To.
	sorted := slices.Sorted(slices.Values(in.Shards))
	var want []Move
	for _, s := range sorted {
		from := in.Owners[s]
		if _, ok := live[from]; !ok {
			from = ""
		}
		if to := p.Target[s]; to != from {
			want = append(want, Move{Shard: s, From: from, To: to})
		}
	}
	if !slices.Equal(want, p.Moves) {
		return fmt.Errorf("moves differ:\n got %v\nwant %v", p.Moves, want)
	}

	// For: every free shard has exactly one designated acquirer, every
	// release belongs to its holder, and both lists are sorted.
	var free, held int
	for _, mv := range p.Moves {
		if mv.From == "" {
			free++
		} else {
			held++
		}
	}
	var acquired, released int
	for id := range live {
		acq, rel := p.For(id)
		if !slices.IsSorted(acq) || !slices.IsSorted(rel) {
			return fmt.Errorf("For(%q) not sorted", id)
		}
		for _, s := range acq {
			_, held := live[in.Owners[s]]
			if p.Target[s] != id || held {
				return fmt.Errorf("For(%q) acquires %q, not a free shard targeted to it", id, s)
			}
		}
		for _, s := range rel {
			if in.Owners[s] != id || p.Target[s] == id {
				return fmt.Errorf("For(%q) releases %q, which it does not hold or keeps", id, s)
			}
		}
		acquired += len(acq)
		released += len(rel)
	}
	if acquired != free || released != held {
		return fmt.Errorf("For: %d acquires / %d releases, moves have %d free / %d held",
			acquired, released, free, held)
	}
	return nil
}

// shuffled returns a copy of in with members and shards in another order and
// a freshly built Owners map.
func shuffled(in Input, perm func(n int) []int) Input {
	out := Input{Owners: make(map[shard.ID]string, len(in.Owners))}
	for _, i := range perm(len(in.Members)) {
		out.Members = append(out.Members, in.Members[i])
	}
	for _, i := range perm(len(in.Shards)) {
		out.Shards = append(out.Shards, in.Shards[i])
	}
	for s, o := range in.Owners {
		out.Owners[s] = o
	}
	return out
}

// converged returns in with every shard held by its target in p.
func converged(in Input, p Plan) Input {
	out := in
	out.Owners = make(map[shard.ID]string, len(p.Target))
	for s, m := range p.Target {
		out.Owners[s] = m
	}
	return out
}
