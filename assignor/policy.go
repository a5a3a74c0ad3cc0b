package assignor

import (
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// DefaultColdStartGather is how long a cold fleet's first placement waits
// at most for members to stop joining when the policy says 0. The wait
// ends 300 ms after the last join, so only a fleet whose members keep
// joining waits this long; it must outlast the registration of a large
// fleet started together: a thousand workers on one etcd registered over
// more than 3 s, the former default, and the assignor placed every shard
// on the first 275, leaving the other 725 to take their shares by
// hand-offs, one member's share in flight at a time, for minutes.
const DefaultColdStartGather = 10 * time.Second

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
