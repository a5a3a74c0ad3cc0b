package fencecost

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/hashicorp/consul/api"
	"go.etcd.io/bbolt"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/bolt"
	"github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

// Memory pairs the memory store's commit with a map write under a mutex:
// the same map behind the same kind of lock, written blind. It has no
// batch API, so there is no batched pair. close releases the store.
func Memory() (single Pair, close func()) {
	st := memory.New()
	var mu sync.Mutex
	m := map[shard.ID]offsets.Checkpoint{}
	return Pair{
		Name: "commit", PerOp: 1,
		Fenced: func(ctx context.Context, i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) },
		Unfenced: func(_ context.Context, i int64) error {
			mu.Lock()
			m["bench/unfenced"] = offsets.Checkpoint{Offset: i, Token: 1, Floor: 1}
			mu.Unlock()
			return nil
		},
	}, func() { _ = st.Close() }
}

// Bolt pairs the bolt store's commit (one read-write transaction: get,
// check, put, fsync) with the same record written without the read and the
// check into a second file in dir, on the same disk (the store holds its
// own file's lock). No batch API, so no batched pair.
func Bolt(dir string) (single Pair, close func(), err error) {
	st, err := bolt.Open(filepath.Join(dir, "offsets.db"))
	if err != nil {
		return Pair{}, nil, err
	}
	db, err := bbolt.Open(filepath.Join(dir, "unfenced.db"), 0o600, nil)
	if err != nil {
		_ = st.Close()
		return Pair{}, nil, err
	}
	bucket := []byte("offsets")
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
		_ = db.Close()
		_ = st.Close()
		return Pair{}, nil, err
	}
	return Pair{
		Name: "commit", PerOp: 1,
		Fenced: func(ctx context.Context, i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) },
		Unfenced: func(_ context.Context, i int64) error {
			v := make([]byte, 25) // the store's record: version, offset, token, floor
			v[0] = 1
			binary.BigEndian.PutUint64(v[1:], uint64(i))
			binary.BigEndian.PutUint64(v[9:], 1)
			binary.BigEndian.PutUint64(v[17:], 1)
			return db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put([]byte("bench/unfenced"), v) })
		},
	}, func() { _ = db.Close(); _ = st.Close() }, nil
}

// Postgres pairs the store's fenced upsert (INSERT … ON CONFLICT … DO
// UPDATE … WHERE floor <= excluded.floor) with the same upsert without the
// WHERE, on the same table and pool; batched: CommitBatch of BatchSize
// entries against the same unnest upsert without the WHERE and without
// RETURNING the accepted shards.
func Postgres(st *postgres.Store) (single, batched Pair) {
	plain := fmt.Sprintf(`INSERT INTO %s AS o (shard, shard_offset, token, floor, updated_at) VALUES ($1, $2, $3, $3, now())
		ON CONFLICT (shard) DO UPDATE SET shard_offset = excluded.shard_offset, token = excluded.token, floor = excluded.floor, updated_at = excluded.updated_at`, st.Table())
	plainBatch := fmt.Sprintf(`INSERT INTO %s AS o (shard, shard_offset, token, floor, updated_at)
		SELECT b.shard, b.off, b.tok, b.tok, now() FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS b(shard, off, tok)
		ORDER BY b.shard
		ON CONFLICT (shard) DO UPDATE SET shard_offset = excluded.shard_offset, token = excluded.token, floor = excluded.floor, updated_at = excluded.updated_at`, st.Table())
	single = Pair{
		Name: "commit", PerOp: 1,
		Fenced: func(ctx context.Context, i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) },
		Unfenced: func(ctx context.Context, i int64) error {
			_, err := st.Pool().Exec(ctx, plain, "bench/unfenced", i, int64(1))
			return err
		},
	}
	entries, unfenced := batchEntries()
	shards := make([]string, len(unfenced))
	offs := make([]int64, len(unfenced))
	toks := make([]int64, len(unfenced))
	for k, id := range unfenced {
		shards[k], toks[k] = string(id), 1
	}
	batched = Pair{
		Name: fmt.Sprintf("batch%d", BatchSize), PerOp: BatchSize,
		Fenced: func(ctx context.Context, i int64) error { return st.CommitBatch(ctx, withOffset(entries, i)) },
		Unfenced: func(ctx context.Context, i int64) error {
			for k := range offs {
				offs[k] = i
			}
			_, err := st.Pool().Exec(ctx, plainBatch, shards, offs, toks)
			return err
		},
	}
	return single, batched
}

// Consul pairs the store's fenced commit (a /v1/txn CAS on the key's
// ModifyIndex) with a plain PUT /v1/kv of the same value through client
// (the store's own, so the same connection pool); vsTxnSet with a plain set
// sent through /v1/txn, the endpoint the CAS needs, which splits the cost
// into the check's and the endpoint's; batched: CommitBatch of BatchSize
// entries against one transaction of BatchSize plain sets.
func Consul(st *consul.Store, client *api.Client) (single, vsTxnSet, batched Pair) {
	value := func(i int64) []byte {
		return fmt.Appendf(nil, `{"v":1,"offset":%d,"token":1,"floor":1}`, i) // what the store writes
	}
	fenced := func(ctx context.Context, i int64) error { return st.Commit(ctx, "bench/fenced", 1, i) }
	txnSet := func(ctx context.Context, keys []string, i int64) error {
		ops := make(api.TxnOps, len(keys))
		for k, key := range keys {
			ops[k] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: value(i)}}
		}
		ok, resp, _, err := client.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
		if err == nil && !ok {
			err = fmt.Errorf("txn rolled back: %v", resp.Errors)
		}
		return err
	}
	single = Pair{
		Name: "commit", PerOp: 1, Fenced: fenced,
		Unfenced: func(ctx context.Context, i int64) error {
			_, err := client.KV().Put(&api.KVPair{Key: st.Key("bench/unfenced"), Value: value(i)}, (&api.WriteOptions{}).WithContext(ctx))
			return err
		},
	}
	setKey := []string{st.Key("bench/txn-set")}
	vsTxnSet = Pair{
		Name: "commit-vs-txn-set", PerOp: 1, Fenced: fenced,
		Unfenced: func(ctx context.Context, i int64) error { return txnSet(ctx, setKey, i) },
	}
	entries, unfenced := batchEntries()
	keys := make([]string, len(unfenced))
	for k, id := range unfenced {
		keys[k] = st.Key(id)
	}
	batched = Pair{
		Name: fmt.Sprintf("batch%d", BatchSize), PerOp: BatchSize,
		Fenced:   func(ctx context.Context, i int64) error { return st.CommitBatch(ctx, withOffset(entries, i)) },
		Unfenced: func(ctx context.Context, i int64) error { return txnSet(ctx, keys, i) },
	}
	return single, vsTxnSet, batched
}

// batchEntries names the BatchSize shards of a batched pair: the fenced
// side's entries (token 1) and the unfenced side's shards.
func batchEntries() ([]offsets.Entry, []shard.ID) {
	entries := make([]offsets.Entry, BatchSize)
	unfenced := make([]shard.ID, BatchSize)
	for k := range entries {
		entries[k] = offsets.Entry{Shard: shard.ID(fmt.Sprintf("bench/fenced-%03d", k)), Token: 1}
		unfenced[k] = shard.ID(fmt.Sprintf("bench/unfenced-%03d", k))
	}
	return entries, unfenced
}

// withOffset sets every entry's offset to i and returns the entries.
func withOffset(entries []offsets.Entry, i int64) []offsets.Entry {
	for k := range entries {
		entries[k].Offset = i
	}
	return entries
}
