package rebalance_test

import (
	"fmt"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// A third worker joins a converged two-worker fleet of six shards: only the
// two shards the joiner receives move, each released by its holder first.
func ExampleCompute() {
	shards := shard.Config{Shards: 6}.IDs()
	owners := map[shard.ID]string{}
	for i, s := range shards {
		owners[s] = []string{"a", "b"}[i%2]
	}
	plan, err := rebalance.Compute(rebalance.Input{
		Shards:  shards,
		Members: []rebalance.Member{{ID: "a"}, {ID: "b"}, {ID: "c"}},
		Owners:  owners,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan.Counts())
	for _, mv := range plan.Moves {
		fmt.Printf("%s: %s -> %s\n", mv.Shard, mv.From, mv.To)
	}
	acquire, release := plan.For("a")
	fmt.Println("a acquires", acquire, "releases", release)
	// Output:
	// map[a:2 b:2 c:2]
	// stream/shard-002: a -> c
	// stream/shard-003: b -> c
	// a acquires [] releases [stream/shard-002]
}
