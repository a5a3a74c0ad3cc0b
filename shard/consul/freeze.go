package consul

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/shard"
)

func (c *Coordinator) freezeKey() string { return c.prefix + "freeze" }

// SetFreeze writes P/freeze with a plain set (no session: the freeze
// outlives whoever set it and the assignor), or deletes it when mark is
// nil; deleting a missing key is not an error.
func (f fleet) SetFreeze(ctx context.Context, mark *shard.Mark) error {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if mark != nil && mark.By == "" {
		return fmt.Errorf("%w: freeze mark has an empty by (who froze the fleet)", shard.ErrInvalidArgument)
	}
	op := &api.KVTxnOp{Verb: api.KVDelete, Key: c.keys.Freeze()}
	if mark != nil {
		value, err := json.Marshal(mark)
		if err != nil {
			return fmt.Errorf("shard/consul: encode freeze %+v: %w", *mark, err)
		}
		op.Verb, op.Value = api.KVSet, value
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	_, txnErrs, err := c.txn(octx, "set freeze", api.TxnOps{{KV: op}})
	if err != nil {
		return err
	}
	if len(txnErrs) > 0 {
		return c.txnFailure("set freeze", txnErrs)
	}
	return nil
}
