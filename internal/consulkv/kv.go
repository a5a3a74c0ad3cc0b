package consulkv

import (
	"context"
	"time"

	"github.com/hashicorp/consul/api"
)

// MaxTxnOps is Consul's cap on the operations of one /v1/txn request
// (1.14: 128; a larger transaction is refused with HTTP 413).
const MaxTxnOps = 128

// DefaultRequestTimeout bounds one call (a blocking query's wait aside)
// when a backend's config leaves its timeout at zero.
const DefaultRequestTimeout = 10 * time.Second

// KV is the Consul KV calls shard/consul and offsets/consul make, and no
// more. Implementations are safe for concurrent use. Every call honours
// ctx; its errors are read with Classify.
type KV interface {
	// Txn sends ops as one /v1/txn request. A committed transaction
	// returns its results; a rolled-back one returns Consul's
	// per-operation errors and a nil error. More than MaxTxnOps operations
	// are refused with HTTP 413 (Classify: KindRefused).
	Txn(ctx context.Context, ops api.TxnOps) (api.TxnResults, api.TxnErrors, error)
	// Get reads one key: nil when it is missing. Meta.LastIndex is
	// Consul's X-Consul-Index for it: its ModifyIndex while it exists,
	// the store's highest index while it does not.
	Get(ctx context.Context, key string, q Query) (*api.KVPair, Meta, error)
	// List reads every key under prefix, sorted by key.
	List(ctx context.Context, prefix string, q Query) (api.KVPairs, Meta, error)
	// Keys lists the names of the keys under prefix, each cut after the
	// first separator past prefix (Consul's ?keys&separator=), sorted and
	// without repeats: with separator "/", the entries one level below.
	// Meta.LastIndex is List's for the same prefix, so a blocking Keys is
	// a cheap way to wait for a change under a prefix of many keys.
	Keys(ctx context.Context, prefix, separator string, q Query) ([]string, Meta, error)
	// CAS writes p if the key's ModifyIndex is p.ModifyIndex (0: only if
	// it does not exist), and reports whether it did.
	CAS(ctx context.Context, p *api.KVPair) (bool, error)
	// Delete deletes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// DeleteCAS deletes p.Key if its ModifyIndex is still p.ModifyIndex,
	// and reports whether it did (a missing key counts as deleted).
	DeleteCAS(ctx context.Context, p *api.KVPair) (bool, error)
	// DeleteTree deletes every key under prefix.
	DeleteTree(ctx context.Context, prefix string) error
}

// Query says how a read is made.
type Query struct {
	// WaitIndex, if not 0, makes the read a blocking query: it returns
	// when the index moves past WaitIndex or WaitTime has passed.
	WaitIndex uint64
	// WaitTime bounds a blocking query's wait; 0 means Consul's default
	// (5 minutes).
	WaitTime time.Duration
	// Consistent asks the leader to confirm it still leads before
	// answering, so the read reflects every write acknowledged before it.
	Consistent bool
}

// Meta is what a read says besides its keys.
type Meta struct {
	// LastIndex is Consul's X-Consul-Index for the read.
	LastIndex uint64
	// FilteredByACLs: Consul hid keys the token may not read.
	FilteredByACLs bool
}
