package consul

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/hashicorp/consul/api"
)

// txn sends ops as one /v1/txn request. A committed transaction returns its
// results; a rolled-back one (HTTP 409) returns Consul's per-operation
// errors and a nil error; anything else is an error from fail.
//
// It goes through Raw().Write rather than Txn().Txn because the latter
// flattens every other status into an untyped "Failed request" error, and
// the status (403, 429, 500) is what tells a refusal from a transient
// failure.
func (c *Coordinator) txn(parent, ctx context.Context, op string, ops api.TxnOps) (api.TxnResults, api.TxnErrors, error) {
	if len(ops) > MaxTxnOps {
		// A bug here, not a Consul condition: callers chunk.
		return nil, nil, fmt.Errorf("shard/consul: %s: %d operations in one transaction, Consul allows %d", op, len(ops), MaxTxnOps)
	}
	var resp api.TxnResponse
	_, err := c.client.Raw().Write("/v1/txn", ops, &resp, (&api.WriteOptions{}).WithContext(ctx))
	var se api.StatusError
	if errors.As(err, &se) && se.Code == http.StatusConflict {
		var rolled api.TxnResponse
		if jerr := json.Unmarshal([]byte(se.Body), &rolled); jerr != nil || len(rolled.Errors) == 0 {
			return nil, nil, fmt.Errorf("shard/consul: %s: transaction rolled back with an unreadable answer: %s", op, se.Body)
		}
		return nil, rolled.Errors, nil
	}
	if err != nil {
		return nil, nil, c.fail(parent, op, err)
	}
	return resp.Results, nil, nil
}

// readKeys reads the given keys with get-tree operations, MaxTxnOps per
// read-only transaction, and returns those that exist. get-tree, not get:
// a get of a missing key fails the whole transaction, and most keys are
// missing the first time a fleet starts. Entries under a key (a foreign
// "P/shards/x/y") are dropped: only exact matches count.
func (c *Coordinator) readKeys(parent, ctx context.Context, op string, keys []string) (map[string]*api.KVPair, error) {
	found := make(map[string]*api.KVPair, len(keys))
	for chunk := range slices.Chunk(keys, MaxTxnOps) {
		ops := make(api.TxnOps, len(chunk))
		want := make(map[string]bool, len(chunk))
		for i, k := range chunk {
			ops[i] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetTree, Key: k}}
			want[k] = true
		}
		results, txnErrs, err := c.txn(parent, ctx, op, ops)
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
	for _, e := range errs {
		if classifyTxnError(e.What) == refusedPermission {
			return c.permission(op, e.What)
		}
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, fmt.Sprintf("op %d: %s", e.OpIndex, e.What))
	}
	return fmt.Errorf("shard/consul: %s: transaction rolled back: %v", op, msgs)
}
