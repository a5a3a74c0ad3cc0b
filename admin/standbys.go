package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// SetStandbys stores the fleet's standbys for failover per shard and its
// prepare timeout (shard.BalancePolicy's Standbys and PrepareTimeout),
// keeping the rest of the stored policy, and returns the policy stored.
// It refuses, writing nothing: a fleet that stores no policy (ErrNoPolicy;
// its assignor follows its own worker's flags); values Validate refuses;
// and, unless both are zero (clearing them is always allowed), a live
// worker that does not speak shard.StepStandbys (ErrStepMissing naming
// it: its release reads P/policy strictly and could not read one with
// them).
func (o Operator) SetStandbys(ctx context.Context, standbys int, prepareTimeout time.Duration) (shard.BalancePolicy, error) {
	s, err := o.Snapshot(ctx)
	if err != nil {
		return shard.BalancePolicy{}, err
	}
	if s.Policy == nil {
		return shard.BalancePolicy{}, fmt.Errorf("%w: fleet %s; its assignor follows its own worker's flags: store one first with shardctl balance -by count (or -by load)", ErrNoPolicy, o.Name)
	}
	p := s.Policy.Clone()
	p.Standbys, p.PrepareTimeout = standbys, prepareTimeout
	if err := p.Validate(); err != nil {
		return shard.BalancePolicy{}, err
	}
	if err := PolicyReadable(s, o.Name, shard.BalancePolicy{Standbys: standbys, PrepareTimeout: prepareTimeout}); err != nil {
		return shard.BalancePolicy{}, err
	}
	stored, err := o.Coordinator.Fleet().SetPolicy(ctx, p, false)
	if err != nil {
		return shard.BalancePolicy{}, fmt.Errorf("%w: fleet %s's policy: %w", ErrWrite, o.Name, err)
	}
	return stored, nil
}
