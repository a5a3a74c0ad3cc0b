package consul

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Entry and BatchError are the offsets package's, shared by every
// backend that commits in batches.
type (
	Entry      = offsets.Entry
	BatchError = offsets.BatchError
)

// CommitBatch commits many shards with as few requests as Consul allows:
// one transaction of CAS operations per 128 entries, each entry checked
// against its own shard's floor exactly as Commit checks it. Stale entries
// are refused and the others committed; the error is then a *BatchError
// saying which. A CAS conflict on some entries rolls their transaction
// back; those shards are read again and the transaction retried, so a
// conflict costs a retry, never a commit.
//
// The batch is checked before anything is sent: an invalid entry or a
// shard named twice fails the whole batch, nothing written. If a request
// fails, the entries it carried (and those not yet sent) get its error in
// the *BatchError; entries of earlier transactions stay committed.
func (st *Store) CommitBatch(parent context.Context, batch []Entry) error {
	seen := make(map[shard.ID]int, len(batch))
	for i, e := range batch {
		apply := func(cp offsets.Checkpoint) (offsets.Checkpoint, error) {
			return offsets.ApplyCommit(cp, e.Shard, e.Token, e.Offset)
		}
		if err := st.check(parent, "commit batch", e.Shard, apply); err != nil {
			return fmt.Errorf("offsets/consul: batch entry %d: %w", i, err)
		}
		if j, dup := seen[e.Shard]; dup {
			return fmt.Errorf("offsets/consul: batch entries %d and %d are both for shard %s: %w", j, i, e.Shard, shard.ErrInvalidArgument)
		}
		seen[e.Shard] = i
	}
	ctx, cancel := consulkv.WithRequestTimeout(parent, st.timeout)
	defer cancel()

	errs := make([]error, len(batch))
	pending := make([]int, len(batch))
	for i := range pending {
		pending[i] = i
	}
	failRest := func(from []int, err error) error {
		for _, i := range from {
			errs[i] = err
		}
		return &BatchError{Errs: errs}
	}
	for try := 0; len(pending) > 0; try++ {
		// What each pending shard holds now, from the cache or one read.
		var unknown []shard.ID
		for _, i := range pending {
			if _, ok := st.cached(batch[i].Shard); !ok {
				unknown = append(unknown, batch[i].Shard)
			}
		}
		corrupt, err := st.readMany(ctx, unknown)
		if err != nil {
			return failRest(pending, err)
		}
		var writes []write
		for _, i := range pending {
			e := batch[i]
			if err := corrupt[e.Shard]; err != nil {
				errs[i] = err
				continue
			}
			cur, ok := st.cached(e.Shard)
			if !ok { // closed meanwhile
				return failRest(pending, offsets.ErrClosed)
			}
			next, err := offsets.ApplyCommit(cur.cp, e.Shard, e.Token, e.Offset)
			if err != nil {
				errs[i] = err // stale
				continue
			}
			writes = append(writes, write{i: i, next: next, idx: cur.index})
		}
		pending = pending[:0]
		ops := make([]*api.TxnOp, len(writes))
		for k, w := range writes {
			ops[k] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: st.Key(batch[w.i].Shard), Value: offsets.EncodeRecord(w.next), Index: w.idx}}
		}
		txns, err := consulkv.Batches(nil, ops, 0)
		if err != nil {
			return failRest(indexes(writes, write.index), err)
		}
		off := 0
		for _, txn := range txns {
			chunk, rest := writes[off:off+len(txn)], writes[off:] // rest: this chunk and those not sent
			off += len(txn)
			results, txnErrs, err := st.txn(ctx, fmt.Sprintf("commit batch of %d", len(txn)), "", txn, true)
			if err != nil {
				// This chunk's outcome is err's; later chunks were not
				// sent; earlier rolled-back ones (in pending) were not
				// committed either.
				for _, w := range rest {
					st.forget(batch[w.i].Shard)
				}
				return failRest(append(pending, indexes(rest, write.index)...), err)
			}
			if len(txnErrs) > 0 {
				// Rolled back: every entry of the chunk goes again; those
				// whose index moved are read again first.
				for _, te := range txnErrs {
					if consulkv.ClassifyRefusal(te.What) != consulkv.RefusedStaleIndex {
						return failRest(append(pending, indexes(rest, write.index)...),
							st.txnFailure(ctx, "commit batch", batch[chunk[te.OpIndex].i].Shard, txnErrs))
					}
					st.forget(batch[chunk[te.OpIndex].i].Shard)
				}
				pending = append(pending, indexes(chunk, write.index)...)
				continue
			}
			if len(results) != len(chunk) {
				// Committed, but the answer is not one we can read.
				return failRest(indexes(chunk, write.index),
					fmt.Errorf("%w: offsets/consul: commit batch: %d results for %d operations", ErrOutcomeUnknown, len(results), len(chunk)))
			}
			for k, w := range chunk {
				st.remember(batch[w.i].Shard, entry{cp: w.next, index: results[k].KV.ModifyIndex})
			}
		}
		if len(pending) > 0 {
			if err := backoff(ctx, try); err != nil {
				return failRest(pending, st.fail(ctx, "commit batch", "", errors.New("gave up after repeated CAS conflicts"), consulkv.KindUnavailable))
			}
		}
	}
	for _, err := range errs {
		if err != nil {
			return &BatchError{Errs: errs}
		}
	}
	return nil
}

// write is one entry of a batch ready to send: the entry's position, the
// checkpoint to write and the index it was read at.
type write struct {
	i    int
	next offsets.Checkpoint
	idx  uint64
}

func (w write) index() int { return w.i }

func indexes[T any](xs []T, f func(T) int) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// readMany reads the given shards' keys, 128 per read-only transaction,
// and remembers what it found. A value that is not a valid record is
// returned per shard, so that it fails its own entry only.
func (st *Store) readMany(ctx context.Context, ids []shard.ID) (map[shard.ID]error, error) {
	corrupt := map[shard.ID]error{}
	ops := make([]*api.TxnOp, len(ids))
	for k, s := range ids {
		ops[k] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetOrEmpty, Key: st.Key(s)}}
	}
	txns, err := consulkv.Batches(nil, ops, 0)
	if err != nil {
		return nil, err
	}
	off := 0
	for _, txn := range txns {
		chunk := ids[off : off+len(txn)]
		off += len(txn)
		results, txnErrs, err := st.txn(ctx, fmt.Sprintf("read %d shards", len(txn)), "", txn, false)
		if err != nil {
			return nil, err
		}
		if len(txnErrs) > 0 {
			return nil, st.txnFailure(ctx, "read", chunk[txnErrs[0].OpIndex], txnErrs)
		}
		if len(results) != len(chunk) {
			// Consul drops from a read transaction's results what the ACL
			// token may not read, instead of failing it.
			return nil, st.fail(ctx, "read", "", fmt.Errorf("%d of %d reads came back empty (filtered by ACLs)", len(chunk)-len(results), len(chunk)), consulkv.KindPermission)
		}
		for k, s := range chunk {
			kv := results[k].KV
			cp, err := offsets.DecodeRecord(s, st.Key(s), kv.Value, kv.ModifyIndex != 0)
			if err != nil {
				corrupt[s] = err
				continue
			}
			st.remember(s, entry{cp: cp, index: kv.ModifyIndex})
		}
	}
	return corrupt, nil
}
