package worker

import (
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// stepLoads is the assignor's per-shard load for rebalance.State.Loads,
// from the member records in snap; nil while the fleet balances shard
// counts (issue 17 fills it in).
func (w *Worker) stepLoads(snap shard.Snapshot) map[shard.ID]float64 { return nil }

// loadPolicy is the rebalance.LoadPolicy this worker's Config asks for.
func (c *Config) loadPolicy() rebalance.LoadPolicy { return rebalance.LoadPolicy{} }
