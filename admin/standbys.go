package admin

import (
	"context"
	"fmt"
	"strings"
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
	if old := Lacking(s, shard.StepStandbys); len(old) > 0 && (standbys != 0 || prepareTimeout != 0) {
		return shard.BalancePolicy{}, fmt.Errorf("%w: fleet %s: live workers %s do not speak %q (release 0.1.0 or older) and could not read a balance policy with standbys or a prepare timeout; upgrade or stop them first",
			ErrStepMissing, o.Name, strings.Join(old, ", "), shard.StepStandbys)
	}
	stored, err := o.Coordinator.Fleet().SetPolicy(ctx, p, false)
	if err != nil {
		return shard.BalancePolicy{}, fmt.Errorf("%w: fleet %s's policy: %w", ErrWrite, o.Name, err)
	}
	return stored, nil
}
