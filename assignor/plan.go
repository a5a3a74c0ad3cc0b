package assignor

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// Plan is what the assignor's step would decide on snap at now, with no
// cap on the hand-offs it starts and the fleet unfrozen: every move the
// balance wants now, by the assignor's own code, under policy p (the one
// the assignor follows is Following(snap, …)). Operators' views show its hand-offs as the fleet's queued
// moves (those in flight are already out of their owners' keys). With
// load balancing, shards weigh what their holders report (Member.Load),
// as the assignor reads them. It fails when snap has no config, or when
// the step refuses the state.
func Plan(snap shard.Snapshot, p shard.BalancePolicy, now time.Time) (rebalance.Decision, error) {
	if snap.Config == nil {
		return rebalance.Decision{}, fmt.Errorf("%w: the fleet has no config to plan against", shard.ErrInvalidArgument)
	}
	u := newUniverse(snap, *snap.Config, waveOf(p, snap))
	ids := u.ids
	st, _ := State(snap, u.cfg, ids, now)
	u.filter(&st)
	st.Rules = Rules(snap, p)
	st.Frozen = false
	if p.Load != nil {
		var l loads
		st.Loads = l.of(snap, ids)
	}
	sp := StepPolicy(p, shard.LeasePolicy{})
	sp.MaxMovesInFlight = len(ids) + 1
	return rebalance.Step(st, sp)
}
