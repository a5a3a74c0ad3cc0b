package consul

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/consul/api"

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
	ctx, cancel := context.WithTimeout(parent, st.timeout)
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
		corrupt, err := st.readMany(parent, ctx, unknown)
		if err != nil {
			return failRest(pending, err)
		}
		type write struct {
			i    int
			next offsets.Checkpoint
			idx  uint64
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
		for chunk := range slices.Chunk(writes, maxTxnOps) {
			ops := make(api.TxnOps, len(chunk))
			for k, w := range chunk {
				ops[k] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: st.Key(batch[w.i].Shard), Value: encode(w.next), Index: w.idx}}
			}
			results, txnErrs, err := st.txn(parent, ctx, fmt.Sprintf("commit batch of %d", len(ops)), "", ops, true, false)
			if err != nil {
				// This chunk's outcome is err's; later chunks were not
				// sent; earlier rolled-back ones (in pending) were not
				// committed either.
				rest := pending
				for _, w := range writes[slices.IndexFunc(writes, func(x write) bool { return x.i == chunk[0].i }):] {
					st.forget(batch[w.i].Shard)
					rest = append(rest, w.i)
				}
				return failRest(rest, err)
			}
			if len(txnErrs) > 0 {
				// Rolled back: every entry of the chunk goes again; those
				// whose index moved are read again first.
				for _, te := range txnErrs {
					if !strings.Contains(te.What, "index is stale") {
						rest := append(pending, indexes(writes[slices.IndexFunc(writes, func(x write) bool { return x.i == chunk[0].i }):],
							func(w write) int { return w.i })...)
						return failRest(rest, st.txnFailure(parent, "commit batch", batch[chunk[te.OpIndex].i].Shard, txnErrs))
					}
					st.forget(batch[chunk[te.OpIndex].i].Shard)
				}
				for _, w := range chunk {
					pending = append(pending, w.i)
				}
				continue
			}
			if len(results) != len(chunk) {
				// Committed, but the answer is not one we can read.
				return failRest(indexes(chunk, func(w write) int { return w.i }),
					fmt.Errorf("%w: offsets/consul: commit batch: %d results for %d operations", ErrOutcomeUnknown, len(results), len(chunk)))
			}
			for k, w := range chunk {
				st.remember(batch[w.i].Shard, entry{cp: w.next, index: results[k].KV.ModifyIndex})
			}
		}
		if len(pending) > 0 {
			if err := backoff(ctx, try); err != nil {
				return failRest(pending, st.fail(parent, "commit batch", "", errors.New("gave up after repeated CAS conflicts"), failNotSent))
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
func (st *Store) readMany(parent, ctx context.Context, ids []shard.ID) (map[shard.ID]error, error) {
	corrupt := map[shard.ID]error{}
	for chunk := range slices.Chunk(ids, maxTxnOps) {
		ops := make(api.TxnOps, len(chunk))
		for k, s := range chunk {
			ops[k] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetOrEmpty, Key: st.Key(s)}}
		}
		results, txnErrs, err := st.txn(parent, ctx, fmt.Sprintf("read %d shards", len(ops)), "", ops, false, false)
		if err != nil {
			return nil, err
		}
		if len(txnErrs) > 0 {
			return nil, st.txnFailure(parent, "read", chunk[txnErrs[0].OpIndex], txnErrs)
		}
		if len(results) != len(chunk) {
			// Consul drops what the ACL token may not read (see read).
			return nil, st.fail(parent, "read", "", fmt.Errorf("%d of %d reads came back empty (filtered by ACLs)", len(chunk)-len(results), len(chunk)), failPermission)
		}
		for k, s := range chunk {
			kv := results[k].KV
			cp, err := decode(s, st.Key(s), kv.Value, kv.ModifyIndex)
			if err != nil {
				corrupt[s] = err
				continue
			}
			st.remember(s, entry{cp: cp, index: kv.ModifyIndex})
		}
	}
	return corrupt, nil
}
