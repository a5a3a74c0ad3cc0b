package etcd

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// maxTxnBytes bounds the values of one transaction, under etcd's default
// request limit of 1.5 MiB (--max-request-bytes).
const maxTxnBytes = 1 << 20

// Assign writes the assignment keys of set, MaxTxnAssignments workers (and
// at most maxTxnBytes of values) per transaction, each transaction
// comparing that the assignor's key is still at epoch's revision, as the
// session wrote it, and that the session's key exists: a deposed or
// paused assignor's writes are refused by etcd itself. A worker's key and
// the assignor's memory beside it are written (or deleted) together,
// sealed (fleetkeys.SealValue). Each transaction has its own
// RequestTimeout, and one after a transaction that gave paceAfterLocks
// free shards or more waits for their acquisitions to be applied
// (awaitApplied, bounded), so that a cold start's write keeps etcd's
// apply close behind its commits.
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
	groups := make([][]clientv3.Op, len(sealed))
	frees := make([]int, len(sealed)) // the free shards each key gives, which its worker acquires
	for i, a := range sealed {
		if k := set[a.Worker]; k != nil {
			frees[i] = len(k.Free)
		}
		groups[i] = []clientv3.Op{clientv3.OpDelete(c.keys.Assign(a.Worker)), clientv3.OpDelete(c.keys.Memory(a.Worker))}
		if a.Value != nil {
			groups[i] = []clientv3.Op{clientv3.OpPut(c.keys.Assign(a.Worker), string(a.Value)), clientv3.OpPut(c.keys.Memory(a.Worker), string(a.Memory))}
		}
	}
	checks, err := c.assignorChecks(octx, id, epoch)
	if err != nil {
		return err
	}
	cancel() // each transaction below has a RequestTimeout of its own
	wait := func(takers int) { c.awaitApplied(ctx, takers) }
	write := func(batch [][]clientv3.Op) error { return c.assignBatch(ctx, id, epoch, checks, batch) }
	if written, err := paced(batches(groups), frees, wait, write); err != nil {
		return fmt.Errorf("%w; %d of %d assignment keys were written by earlier transactions", err, written, len(workers))
	}
	return nil
}

// paced writes batches in order (frees: the free shards of each key, in
// the same order), calling wait with the number of workers that acquire
// before a batch that follows one giving paceAfterLocks free shards or
// more. It returns how many keys were written.
func paced(batches [][][]clientv3.Op, frees []int, wait func(takers int), write func([][]clientv3.Op) error) (int, error) {
	written, last := 0, 0 // last: the keys of the batch before
	for _, batch := range batches {
		if locks, takers := given(frees[written-last : written]); locks >= paceAfterLocks {
			wait(takers)
		}
		if err := write(batch); err != nil {
			return written, err
		}
		written, last = written+len(batch), len(batch)
	}
	return written, nil
}

// given sums the free shards of some keys, and counts the keys that give
// any: the locks their workers will acquire, in about that many
// transactions.
func given(frees []int) (locks, takers int) {
	for _, n := range frees {
		if n > 0 {
			locks, takers = locks+n, takers+1
		}
	}
	return locks, takers
}

// assignBatch writes one transaction of Assign, under its own
// RequestTimeout.
func (c *Coordinator) assignBatch(ctx context.Context, id shard.SessionID, epoch shard.Token, checks []clientv3.Cmp, batch [][]clientv3.Op) error {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.cli.Txn(octx).If(checks...).Then(slices.Concat(batch...)...).Commit()
	if err != nil {
		return c.fail(octx, "assign", err)
	}
	if !resp.Succeeded {
		return c.notAssignor(octx, id, epoch)
	}
	return nil
}

// batches splits groups (each one worker's operations, kept together)
// into transactions of at most MaxTxnAssignments workers and about
// maxTxnBytes of values.
func batches(groups [][]clientv3.Op) [][][]clientv3.Op {
	var (
		out   [][][]clientv3.Op
		cur   [][]clientv3.Op
		bytes int
	)
	for _, g := range groups {
		size := 0
		for _, op := range g {
			size += len(op.KeyBytes()) + len(op.ValueBytes())
		}
		if len(cur) == MaxTxnAssignments || len(cur) > 0 && bytes+size > maxTxnBytes {
			out, cur, bytes = append(out, cur), nil, 0
		}
		cur, bytes = append(cur, g), bytes+size
	}
	return append(out, cur)
}

// assignorChecks reads the assignor's key and returns the compares that
// hold while the session still holds it at epoch: the key's revision, and
// the session's key. A session that does not hold it at epoch now wraps
// shard.ErrNotAssignor.
func (c *Coordinator) assignorChecks(ctx context.Context, id shard.SessionID, epoch shard.Token) ([]clientv3.Cmp, error) {
	key := c.keys.Assignor()
	kvs, _, err := c.readKeys(ctx, "read the assignor", []string{key, c.sessionKey(id)})
	if err != nil {
		return nil, err
	}
	if _, _, err := c.session(ctx, id, kvs); err != nil {
		return nil, fmt.Errorf("%w: %w", shard.ErrNotAssignor, err) // a session that is gone holds nothing
	}
	kv, own := kvs[key], kvs[c.sessionKey(id)]
	if kv == nil || uint64(kv.ModRevision) != epoch.Index() {
		return nil, c.notAssignor(ctx, id, epoch)
	}
	if e, ok := unwrap(kv.Value); !ok || e.Session != id {
		return nil, c.notAssignor(ctx, id, epoch)
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision),
		sessionExists(own),
	}, nil
}

// notAssignor is the error, wrapping shard.ErrNotAssignor, for a session
// that does not hold the assignor's key at epoch, naming who does when it
// can be read.
func (c *Coordinator) notAssignor(ctx context.Context, id shard.SessionID, epoch shard.Token) error {
	key := c.keys.Assignor()
	keys, _, err := c.readHeld(ctx, "read the assignor", []string{key})
	holder := "it is free"
	if err != nil {
		holder = fmt.Sprintf("its holder could not be read: %v", err)
	} else if p := keys[key].pair; p == nil {
		holder = "it is missing"
	} else if k := fleetkeys.DecodeLock(p); k.Held() {
		holder = fmt.Sprintf("session %q (worker %q) holds it at epoch %d", k.Session, k.Worker, k.Token)
	}
	return fmt.Errorf("%w: session %q does not hold %s at epoch %d: %s", shard.ErrNotAssignor, id, key, epoch, holder)
}

// Watch returns worker's assignment key once it changed past after
// (follow), read with the assignor's memory beside it at one revision to
// tell a sealed pair from a hand edit. Only the key is watched, so that
// writes of other keys never wake its worker.
func (as assignments) Watch(ctx context.Context, worker string, after uint64) (shard.AssignmentKey, error) {
	c := as.c
	if err := ctxErr(ctx); err != nil {
		return shard.AssignmentKey{}, err
	}
	if worker == "" {
		return shard.AssignmentKey{}, fmt.Errorf("%w: assignment worker id is empty", shard.ErrInvalidArgument)
	}
	key := c.keys.Assign(worker)
	var got shard.AssignmentKey
	index, err := c.follow(ctx, "watch assignment "+worker, after, func(ctx context.Context) ([]string, uint64, int64, error) {
		kvs, rev, err := c.readKeys(ctx, "watch assignment "+worker, []string{key, c.keys.Memory(worker)})
		if err != nil {
			return nil, 0, 0, err
		}
		got = shard.AssignmentKey{}
		kv := kvs[key]
		if kv == nil {
			return []string{key}, uint64(rev), rev, nil
		}
		fleet, err := c.shardSet(ctx, "watch assignment (read config)")
		if err != nil {
			return nil, 0, 0, err
		}
		got.Exists = true
		got.Assignment, got.Problem = fleetkeys.DecodeAssignment(fleet, c.pairOf(kv, nil), c.pairOf(kvs[c.keys.Memory(worker)], nil))
		if got.Problem != "" && fleet != nil {
			// A reshard may have added shards the config run here lacks.
			if fleet, err = c.adoptStored(ctx, "watch assignment (read config)"); err != nil {
				return nil, 0, 0, err
			}
			got.Assignment, got.Problem = fleetkeys.DecodeAssignment(fleet, c.pairOf(kv, nil), c.pairOf(kvs[c.keys.Memory(worker)], nil))
		}
		got.Assignment.Memory = nil // the assignor's, not the worker's
		return []string{key}, uint64(kv.ModRevision), rev, nil
	})
	if err != nil {
		return shard.AssignmentKey{}, err
	}
	got.Index = index
	return got, nil
}

// shardSet returns the config Configure settled, else the stored one
// (read once and kept, for a coordinator never configured), else nil.
func (c *Coordinator) shardSet(ctx context.Context, op string) (*fleetkeys.ShardSet, error) {
	if set := c.keys.Fleet(); set != nil {
		return set, nil
	}
	if stored := c.keys.LastStored(); stored != nil {
		return stored, nil
	}
	kvs, _, err := c.readKeys(ctx, op, []string{c.keys.Config()})
	if err != nil {
		return nil, err
	}
	return c.keys.Shards(c.pairOf(kvs[c.keys.Config()], nil)), nil
}

// adoptStored reads P/config and runs it from now on if a reshard
// rewrote the config this coordinator runs (fleetkeys.Decoder.Adopt);
// it returns the shard set it runs afterwards.
func (c *Coordinator) adoptStored(ctx context.Context, op string) (*fleetkeys.ShardSet, error) {
	kvs, _, err := c.readKeys(ctx, op, []string{c.keys.Config()})
	if err != nil {
		return nil, err
	}
	return c.keys.Adopt(c.pairOf(kvs[c.keys.Config()], nil)), nil
}
