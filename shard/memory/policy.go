package memory

import (
	"context"

	"github.com/shardlease/shardlease/shard"
)

// SetPolicy writes P/policy unless ifNone and one is stored, one write;
// writing the policy already stored writes nothing.
func (f fleet) SetPolicy(ctx context.Context, p shard.BalancePolicy, ifNone bool) (shard.BalancePolicy, error) {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.BalancePolicy{}, err
	}
	if err := p.Validate(); err != nil {
		return shard.BalancePolicy{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if c.policy != nil && (ifNone || c.policy.Equal(p)) {
		return c.policy.Clone(), nil
	}
	c.commitLocked()
	stored := p.Clone()
	c.policy = &stored
	return stored.Clone(), nil
}
