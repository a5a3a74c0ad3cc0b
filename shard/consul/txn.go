package consul

import (
	"context"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
)

// txn sends ops as one /v1/txn request (consulkv: the HTTP status is
// read, so a refusal is told from a transient failure). A committed
// transaction returns its results; a rolled-back one returns Consul's
// per-operation errors and a nil error; anything else is an error from
// fail.
func (c *Coordinator) txn(ctx context.Context, op string, ops api.TxnOps) (api.TxnResults, api.TxnErrors, error) {
	results, txnErrs, err := c.kv.Txn(ctx, ops)
	if err != nil {
		return nil, nil, c.fail(ctx, op, err)
	}
	return results, txnErrs, nil
}

// readKeys reads the given keys with get-tree operations, MaxTxnOps per
// read-only transaction, and returns those that exist. get-tree, not get:
// a get of a missing key fails the whole transaction, and most keys are
// missing the first time a fleet starts. Entries under a key (a foreign
// "P/shards/x/y") are dropped: only exact matches count.
func (c *Coordinator) readKeys(ctx context.Context, op string, keys []string) (map[string]*api.KVPair, error) {
	found := make(map[string]*api.KVPair, len(keys))
	want := make(map[string]bool, len(keys))
	ops := make([]*api.TxnOp, len(keys))
	for i, k := range keys {
		ops[i] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetTree, Key: k}}
		want[k] = true
	}
	txns, err := consulkv.Batches(nil, ops, 0)
	if err != nil {
		return nil, err
	}
	for _, t := range txns {
		results, txnErrs, err := c.txn(ctx, op, t)
		if err != nil {
			return nil, err
		}
		if len(txnErrs) > 0 {
			return nil, c.txnFailure(op, txnErrs)
		}
		for _, r := range results {
			if r.KV != nil && want[r.KV.Key] {
				found[r.KV.Key] = r.KV
			}
		}
	}
	return found, nil
}

// txnFailure describes errors no caller expected (a read refused, an
// operation failing for a reason Consul did not name before).
func (c *Coordinator) txnFailure(op string, errs api.TxnErrors) error {
	if what, ok := consulkv.PermissionRefusal(errs); ok {
		return c.permission(op, what)
	}
	return fmt.Errorf("shard/consul: %s: transaction rolled back: %v", op, consulkv.Rollback(errs))
}
