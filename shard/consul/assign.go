package consul

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// MaxTxnAssignments is how many workers' assignments one Assign
// transaction writes at most: each is two keys (the worker's and the
// assignor's memory beside it), and two of Consul's MaxTxnOps operations
// go to the checks on P/assignor that open every transaction.
const MaxTxnAssignments = (MaxTxnOps - 2) / 2

// maxTxnBytes bounds the JSON body of one Assign transaction. Consul 1.14
// refuses a /v1/txn body over txn_max_req_len (default 512 KiB) with HTTP
// 413; large assignments (many scattered shards per worker) reach that
// before 126 keys do.
const maxTxnBytes = 480 << 10

// Assign encodes every assignment first (keycodec.EncodeAssignment,
// against the config Configure settled, else the stored one), then writes
// the keys in sorted worker order: a set per assignment, a delete per nil,
// at most MaxTxnAssignments workers and about 480 KiB per /v1/txn, each
// transaction opened by check-session and check-index on P/assignor (the
// session, the epoch). Consul rolls back a transaction whose check fails:
// the error wraps shard.ErrNotAssignor, names P/assignor's holder as read
// just after, and says how many keys earlier transactions wrote; those
// stay written. A transaction that fails otherwise (Consul unreachable: its
// outcome is unknown) returns that error with the same count.
func (as assignments) Assign(ctx context.Context, id shard.SessionID, epoch shard.Token, set map[string]*shard.Assignment) error {
	c := as.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	workers, err := fleetkeys.AssignWorkers(set)
	if err != nil || len(workers) == 0 {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	fleet, err := c.shardSet(octx, "assign (read config)")
	if err != nil {
		return err
	}
	sealed, err := fleetkeys.SealAssignments(fleet, c.keys.Config(), epoch, set)
	if err != nil {
		return err
	}
	// A worker's key and the assignor's memory about it are written (or
	// deleted) in one transaction, so they carry one modify index: the
	// seal that tells the assignor's word from a hand edit (shard.Unsealed).
	groups := make([][]*api.TxnOp, len(sealed))
	for i, a := range sealed {
		groups[i] = []*api.TxnOp{
			{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: c.keys.Assign(a.Worker)}},
			{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: c.keys.Memory(a.Worker)}},
		}
		if a.Value != nil {
			groups[i][0].KV.Verb, groups[i][0].KV.Value = api.KVSet, a.Value
			groups[i][1].KV.Verb, groups[i][1].KV.Value = api.KVSet, a.Memory
		}
	}
	checks := c.assignorChecks(id, epoch)
	batches, err := consulkv.GroupBatches(checks, groups, maxTxnBytes)
	if err != nil {
		return err
	}
	written := 0
	for _, batch := range batches {
		_, txnErrs, err := c.txn(octx, "assign", batch)
		if err != nil {
			return fmt.Errorf("%w (%d of %d assignment keys were written by earlier transactions)", err, written, len(workers))
		}
		if len(txnErrs) > 0 {
			for _, e := range txnErrs {
				if e.OpIndex < len(checks) && consulkv.ClassifyRefusal(e.What) != consulkv.RefusedPermission {
					err := c.notAssignor(octx, id, epoch, e.What)
					if errors.Is(err, shard.ErrNotAssignor) {
						err = fmt.Errorf("%w; %d of %d assignment keys were written by earlier transactions", err, written, len(workers))
					}
					return err
				}
			}
			return fmt.Errorf("%w (%d of %d assignment keys were written by earlier transactions)",
				c.txnFailure("assign", txnErrs), written, len(workers))
		}
		written += (len(batch) - len(checks)) / 2
	}
	return nil
}

// notAssignor is the error of a write whose check on P/assignor failed
// (Assign's, History.Record's): what Consul said, and who holds the key
// now.
func (c *Coordinator) notAssignor(ctx context.Context, id shard.SessionID, epoch shard.Token, what string) error {
	holder, err := c.holderOf(ctx, c.keys.Assignor(), "it is free", func(kv *api.KVPair) string {
		k := fleetkeys.DecodeLock(pairOf(kv))
		return fmt.Sprintf("session %q (worker %q) holds it at epoch %d", k.Session, k.Worker, k.Token)
	})
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: session %q does not hold %s at epoch %d (%s): %s",
		shard.ErrNotAssignor, id, c.keys.Assignor(), epoch, what, holder)
}

// assignorChecks open every transaction only the assignor may make: the
// session holds P/assignor, at exactly epoch (its modify index).
func (c *Coordinator) assignorChecks(id shard.SessionID, epoch shard.Token) api.TxnOps {
	return api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: c.keys.Assignor(), Session: string(id)}},
		{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.keys.Assignor(), Index: epoch.Index()}},
	}
}

// Watch is one blocking query on P/assign/<worker> (a KV get with
// WaitIndex after), bounded as Watch's are. It reads one key, so a worker
// follows its assignment without listing the fleet.
//
// Index is Consul's X-Consul-Index for the key. While the key exists it is
// its ModifyIndex, and only a write of that key (or its deletion) wakes
// the watch: writes of other keys do not. While it is missing, Consul
// 1.14.8 answers with the KV store's highest index (tombstones included):
// so a watch asked with an index older than that returns at once, missing
// again, whenever anything was written in the KV store since; once
// blocked, it stays blocked until the key is written or WatchWait passes,
// and then returns the store's index, which has usually moved. A worker
// whose key is missing therefore wakes about once per WatchWait, and at
// once after any write that fell between two of its calls: the assignor
// should write a key (an empty set will do) for every live member. As with
// Watch, an after ahead of Consul's index blocks until the key changes or
// WatchWait passes, where the embedded coordinator returns at once.
//
// The value is read against the config Configure settled (else the
// stored one); a value that cannot be read is returned with Exists set and
// Problem saying what is wrong. An empty worker wraps
// shard.ErrInvalidArgument; a failure wraps shard.ErrUnavailable (or
// ErrPermissionDenied).
func (as assignments) Watch(ctx context.Context, worker string, after uint64) (shard.AssignmentKey, error) {
	c := as.c
	if err := ctxErr(ctx); err != nil {
		return shard.AssignmentKey{}, err
	}
	if worker == "" {
		return shard.AssignmentKey{}, fmt.Errorf("%w: assignment worker id is empty", shard.ErrInvalidArgument)
	}
	kv, index, err := c.watchKey(ctx, "watch assignment "+worker, c.keys.Assign(worker), after)
	if err != nil {
		return shard.AssignmentKey{}, err
	}
	key := shard.AssignmentKey{Index: index}
	if kv == nil {
		return key, nil
	}
	key.Exists = true
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	memory, kv, err := c.memoryOf(octx, worker, kv)
	if err != nil {
		return shard.AssignmentKey{}, err
	}
	fleet, err := c.shardSet(octx, "watch assignment (read config)")
	if err != nil {
		return shard.AssignmentKey{}, err
	}
	key.Assignment, key.Problem = fleetkeys.DecodeAssignment(fleet, pairOf(kv), pairOf(memory))
	if key.Problem != "" && fleet != nil {
		// A reshard may have added shards the config run here lacks.
		stored, _, err := c.kv.Get(octx, c.keys.Config(), consulkv.Query{})
		if err != nil {
			return shard.AssignmentKey{}, c.fail(octx, "watch assignment (read config)", err)
		}
		key.Assignment, key.Problem = fleetkeys.DecodeAssignment(c.keys.Adopt(pairOf(stored)), pairOf(kv), pairOf(memory))
	}
	key.Assignment.Memory = nil // the assignor's, not the worker's
	return key, nil
}

// memoryOf reads the assignor's memory beside worker's key kv, only to
// tell whether the pair is sealed (the worker is not given it). The key
// is watched alone, so that a write of another key never wakes its
// worker, and its memory read after it: if the memory was written since
// the key was read (a later Assign wrote both), both are read again, a
// few times at most.
func (c *Coordinator) memoryOf(ctx context.Context, worker string, kv *api.KVPair) (*api.KVPair, *api.KVPair, error) {
	for range 3 {
		memory, _, err := c.kv.Get(ctx, c.keys.Memory(worker), consulkv.Query{})
		if err != nil {
			return nil, nil, c.fail(ctx, "watch assignment (read memory)", err)
		}
		if memory == nil || memory.ModifyIndex <= kv.ModifyIndex {
			return memory, kv, nil
		}
		again, _, err := c.kv.Get(ctx, c.keys.Assign(worker), consulkv.Query{})
		if err != nil {
			return nil, nil, c.fail(ctx, "watch assignment (read again)", err)
		}
		if again == nil {
			return memory, kv, nil
		}
		kv = again
	}
	return nil, kv, nil
}

// shardSet returns the config Configure settled, else the stored one (read
// once and kept, for a coordinator never configured), else nil.
func (c *Coordinator) shardSet(ctx context.Context, op string) (*fleetkeys.ShardSet, error) {
	if set := c.keys.Fleet(); set != nil {
		return set, nil
	}
	if stored := c.keys.LastStored(); stored != nil {
		return stored, nil
	}
	kv, _, err := c.kv.Get(ctx, c.keys.Config(), consulkv.Query{})
	if err != nil {
		return nil, c.fail(ctx, op, err)
	}
	if kv == nil {
		return nil, nil
	}
	cfg, err := fleetkeys.ParseConfig(kv.Value)
	if err != nil {
		return nil, nil
	}
	return c.keys.Stored(cfg), nil
}
