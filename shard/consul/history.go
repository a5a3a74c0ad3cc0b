package consul

import (
	"context"
	"slices"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/shard"
)

func (c *Coordinator) historyKey() string { return c.prefix + "history" }

// history is the coordinator's shard.History.
type history struct{ c *Coordinator }

// History returns the fleet's ownership history key, P/history.
func (c *Coordinator) History() shard.History { return history{c} }

// Record sets P/history in one /v1/txn opened by the checks every Assign
// transaction starts with (check-session and check-index on P/assignor):
// Consul rolls it back unless the session holds the role at epoch, and
// the error wraps shard.ErrNotAssignor and names the holder.
func (h history) Record(ctx context.Context, id shard.SessionID, epoch shard.Token, value []byte) error {
	c := h.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := shard.CheckHistorySize(value); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	checks := c.assignorChecks(id, epoch)
	ops := append(slices.Clone(checks), &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.keys.History(), Value: value}})
	_, txnErrs, err := c.txn(octx, "record history", ops)
	if err != nil {
		return err
	}
	for _, e := range txnErrs {
		if e.OpIndex < len(checks) && consulkv.ClassifyRefusal(e.What) != consulkv.RefusedPermission {
			return c.notAssignor(octx, id, epoch, e.What)
		}
	}
	if len(txnErrs) > 0 {
		return c.txnFailure("record history", txnErrs)
	}
	return nil
}

// Read is one read of P/history.
func (h history) Read(ctx context.Context) ([]byte, uint64, error) {
	c := h.c
	if err := ctxErr(ctx); err != nil {
		return nil, 0, err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	kv, _, err := c.kv.Get(octx, c.keys.History(), consulkv.Query{})
	if err != nil {
		return nil, 0, c.fail(octx, "read history", err)
	}
	if kv == nil {
		return nil, 0, nil
	}
	return kv.Value, kv.ModifyIndex, nil
}
