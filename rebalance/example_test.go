package rebalance_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// The assignor's loop in miniature: a cold start, then a third worker
// joins. A shard moves in two steps: out of its holder's key first, into the
// joiner's only once its holder released it.
func ExampleStep() {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	state := rebalance.State{
		Now:    start,
		Shards: shard.Config{Shards: 6}.IDs(),
		Members: []rebalance.Member{
			{ID: "a", Session: "s-a"},
			{ID: "b", Session: "s-b"},
		},
		Holders:  make([]string, 6), // Holders[i] holds Shards[i]; "": nobody
		Assigned: map[string]rebalance.Assignment{},
	}
	step := func() rebalance.Decision {
		d, err := rebalance.Step(state, rebalance.Policy{})
		if err != nil {
			panic(err)
		}
		for w, a := range d.Assign { // the assignor writes the keys...
			state.Assigned[w] = a
		}
		for _, mv := range d.Moves {
			fmt.Printf("  %s: %q -> %q (%v)\n", mv.Shard, mv.From, mv.To, mv.Reason)
		}
		return d
	}
	take := func() { // ...and each worker takes the free shards of its key
		for w, a := range state.Assigned {
			for _, s := range a.Shards {
				state.Holders[slices.Index(state.Shards, s)] = w
			}
		}
	}

	fmt.Println("cold start:")
	d := step()
	fmt.Println("  wake at", d.Wake.Sub(start), "unless every shard is taken")
	take()
	step() // the waits end

	fmt.Println("c joins:")
	state.Members = append(state.Members, rebalance.Member{ID: "c", Session: "s-c"})
	d = step()
	for _, mv := range d.Moves {
		state.Holders[slices.Index(state.Shards, mv.Shard)] = "" // the holder drains and releases
	}
	fmt.Println("released:")
	step()
	take()
	fmt.Println("a:", state.Assigned["a"].Shards)
	fmt.Println("b:", state.Assigned["b"].Shards)
	fmt.Println("c:", state.Assigned["c"].Shards)
	// Output:
	// cold start:
	//   stream/shard-000: "" -> "a" (free)
	//   stream/shard-001: "" -> "a" (free)
	//   stream/shard-002: "" -> "a" (free)
	//   stream/shard-003: "" -> "b" (free)
	//   stream/shard-004: "" -> "b" (free)
	//   stream/shard-005: "" -> "b" (free)
	//   wake at 2s unless every shard is taken
	// c joins:
	//   stream/shard-002: "a" -> "c" (rebalance)
	//   stream/shard-004: "b" -> "c" (rebalance)
	// released:
	//   stream/shard-002: "" -> "c" (free)
	//   stream/shard-004: "" -> "c" (free)
	// a: [stream/shard-000 stream/shard-001]
	// b: [stream/shard-003 stream/shard-005]
	// c: [stream/shard-002 stream/shard-004]
}

// Step balances load when State.Loads is given: a, holding the two heavy
// shards, is outside the band (±10 % around the mean of 11); once it has
// been for the patience, the lightest shard that brings it inside goes to
// b by a hand-off, and is placed with b once a released it.
func ExampleStep_load() {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ids := shard.Config{Shards: 4}.IDs()
	state := rebalance.State{
		Now:     start,
		Shards:  ids,
		Members: []rebalance.Member{{ID: "a", Session: "s-a"}, {ID: "b", Session: "s-b"}},
		Holders: []string{"a", "a", "b", "b"},
		Assigned: map[string]rebalance.Assignment{
			"a": {Shards: ids[:2]}, "b": {Shards: ids[2:]},
		},
		Loads: map[shard.ID]float64{ids[0]: 10, ids[1]: 9, ids[2]: 1, ids[3]: 2},
	}
	step := func() rebalance.Decision {
		d, err := rebalance.Step(state, rebalance.Policy{})
		if err != nil {
			panic(err)
		}
		for w, a := range d.Assign {
			state.Assigned[w] = a
		}
		for _, mv := range d.Moves {
			fmt.Printf("  %s: %q -> %q (%v)\n", mv.Shard, mv.From, mv.To, mv.Reason)
		}
		return d
	}
	fmt.Println("a at 19, b at 3, the mean 11:")
	d := step()
	fmt.Println("  out of band since", state.Assigned["a"].OutOfBand.Sub(start), "- wake after", d.Wake.Sub(start))
	state.Now = d.Wake
	fmt.Println("patience over:")
	d = step()
	for _, mv := range d.Moves {
		state.Holders[slices.Index(state.Shards, mv.Shard)] = "" // a releases it
	}
	fmt.Println("released:")
	step()
	fmt.Println("a:", state.Assigned["a"].Shards)
	fmt.Println("b:", state.Assigned["b"].Shards)
	// Output:
	// a at 19, b at 3, the mean 11:
	//   out of band since 0s - wake after 10s
	// patience over:
	//   stream/shard-001: "a" -> "b" (load)
	// released:
	//   stream/shard-001: "" -> "b" (free)
	// a: [stream/shard-000]
	// b: [stream/shard-001 stream/shard-002 stream/shard-003]
}
