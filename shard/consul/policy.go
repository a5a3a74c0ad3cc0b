package consul

import (
	"context"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

func (c *Coordinator) policyKey() string { return c.prefix + "policy" }

// SetPolicy writes P/policy with a plain set (no session: the policy
// outlives every worker), or, with ifNone, with a check-and-set that
// writes only while the key is missing, reading the stored policy when it
// is not.
func (f fleet) SetPolicy(ctx context.Context, p shard.BalancePolicy, ifNone bool) (shard.BalancePolicy, error) {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.BalancePolicy{}, err
	}
	value, err := fleetkeys.PolicyValue(p)
	if err != nil {
		return shard.BalancePolicy{}, err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	if !ifNone {
		_, txnErrs, err := c.txn(octx, "set policy", api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.keys.Policy(), Value: value}}})
		if err != nil {
			return shard.BalancePolicy{}, err
		}
		if len(txnErrs) > 0 {
			return shard.BalancePolicy{}, c.txnFailure("set policy", txnErrs)
		}
		return p.Clone(), nil
	}
	// The stored policy may be deleted between a failed CAS and the read
	// (by an operator): try again, a few times.
	for range 3 {
		ok, err := c.kv.CAS(octx, &api.KVPair{Key: c.keys.Policy(), Value: value, ModifyIndex: 0})
		if err != nil {
			return shard.BalancePolicy{}, c.fail(octx, "propose policy", err)
		}
		if ok {
			return p.Clone(), nil
		}
		kv, _, err := c.kv.Get(octx, c.keys.Policy(), consulkv.Query{})
		if err != nil {
			return shard.BalancePolicy{}, c.fail(octx, "propose policy (read)", err)
		}
		if kv == nil {
			continue
		}
		stored, problem := fleetkeys.DecodePolicy(pairOf(kv))
		if problem != "" {
			return shard.BalancePolicy{}, fmt.Errorf("%w: %s; set a valid one with `shardctl balance`", shard.ErrInvalidArgument, problem)
		}
		return *stored, nil
	}
	return shard.BalancePolicy{}, fmt.Errorf("%w: consul propose policy at %s: %q keeps disappearing between write and read",
		shard.ErrUnavailable, c.cfg.Address, c.keys.Policy())
}
