package assignor

import (
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// DefaultColdStartGather is how long a cold fleet's first placement waits
// at most for members to stop joining when the policy says 0.
const DefaultColdStartGather = 3 * time.Second

// Following is the balancing policy the assignor follows on snap: the
// fleet's stored policy (P/policy), or fallback while none is stored or
// the stored one cannot be read.
func Following(snap shard.Snapshot, fallback shard.BalancePolicy) shard.BalancePolicy {
	if snap.Policy != nil {
		return *snap.Policy
	}
	return fallback
}

// StepPolicy is p as rebalance.Step reads it, with StuckAfter raised to
// what lease policy lease allows (StuckAfter).
func StepPolicy(p shard.BalancePolicy, lease shard.LeasePolicy) rebalance.Policy {
	out := rebalance.Policy{MaxMovesInFlight: p.MaxMovesInFlight, StuckAfter: StuckAfter(p.StuckAfter, lease), PrepareTimeout: p.PrepareTimeout, Standbys: p.Standbys}
	if l := p.Load; l != nil {
		out.Load = rebalance.LoadPolicy{Tolerance: l.Tolerance, MinResidence: l.MinResidence, MinGain: l.MinGain, Patience: l.Patience}
	}
	return out
}

// gatherLimit is p's cold-start gather, its default filled in.
func gatherLimit(p shard.BalancePolicy) time.Duration {
	if p.ColdStartGather == 0 {
		return DefaultColdStartGather
	}
	return p.ColdStartGather
}
