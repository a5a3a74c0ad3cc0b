package consul

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// DefaultRequestTimeout bounds one call when Config.RequestTimeout is zero.
const DefaultRequestTimeout = consulkv.DefaultRequestTimeout

// MaxShardLen bounds a shard ID in bytes: it becomes part of a KV key, and
// an ID that long is a bug, not a shard.
const MaxShardLen = offsets.MaxKeyShardLen

// Connection says how to reach the Consul agent: address, scheme,
// datacenter, token, TLS and a transport wrapper. A shard/consul.Config's
// Connection method returns its own, so a process's coordinator and store
// reach the same agent the same way.
type Connection = consulkv.Connection

// Config says which Consul and which fleet.
type Config struct {
	// Connection reaches the agent; the store builds its own client from
	// it and drops its idle connections on Close. Address is required
	// unless Client is set.
	Connection Connection
	// Client, if set, is used instead of Connection: a client the caller
	// built and keeps (the store never closes it).
	Client *api.Client
	// Address names the agent in error messages when Client is set (an
	// api.Client does not tell its own); default Connection.Address.
	Address string
	// Prefix is the fleet's KV prefix P: offsets live under P/offsets/.
	// Required; no leading or trailing '/'.
	Prefix string
	// RequestTimeout bounds every call, on top of the caller's context,
	// CAS retries included. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// Validate reports every problem with c at once, wrapping
// shard.ErrInvalidArgument.
func (c Config) Validate() error {
	var problems []string
	if c.Client == nil {
		if c.Connection.Address == "" {
			problems = append(problems, "no Client and no Connection.Address: name the Consul agent to reach")
		}
		problems = append(problems, c.Connection.Problems()...)
	}
	if p := fleetkeys.PrefixProblem(c.Prefix); p != "" {
		problems = append(problems, p)
	}
	if c.RequestTimeout < 0 {
		problems = append(problems, fmt.Sprintf("request timeout %v must not be negative", c.RequestTimeout))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: offsets/consul config: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// Store is an offsets.Store in Consul KV. Create it with New; the zero value
// is not usable. All methods are safe for concurrent use, and many Stores
// (in many processes) may share one prefix.
type Store struct {
	kv        consulkv.KV
	transport *http.Transport // built from Config.Connection, else nil
	keyPrefix string          // P/offsets/
	address   string          // " at ADDR" or "", for errors
	timeout   time.Duration
	closed    atomic.Bool

	// known caches, per shard, the last checkpoint this store read or wrote
	// and its ModifyIndex, so that a commit is one CAS round trip when no
	// one else wrote in between. A wrong guess costs a retry, never a
	// wrong answer: the CAS fails if the index moved, and a refusal from
	// the cache is sound because floors only rise.
	mu    sync.Mutex
	known map[shard.ID]entry
}

// entry is a checkpoint as of a ModifyIndex (0: the key did not exist).
type entry struct {
	cp    offsets.Checkpoint
	index uint64
}

var _ offsets.Store = (*Store)(nil)

// New validates cfg and returns a store. It does not contact Consul: an
// unreachable agent shows up as ErrUnavailable on the first call.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var transport *http.Transport
	if cfg.Client == nil {
		client, t, err := consulkv.Dial(cfg.Connection)
		if err != nil {
			return nil, fmt.Errorf("offsets/consul: %w", err)
		}
		cfg.Client, transport = client, t
	}
	if cfg.Address == "" {
		cfg.Address = cfg.Connection.Address
	}
	return newStore(cfg, consulkv.New(cfg.Client), transport), nil
}

// newStore returns a store on kv; transport, if not nil, is closed with it.
func newStore(cfg Config, kv consulkv.KV, transport *http.Transport) *Store {
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	return &Store{
		kv:        kv,
		transport: transport,
		keyPrefix: cfg.Prefix + "/offsets/",
		address:   at(cfg.Address),
		timeout:   timeout,
		known:     make(map[shard.ID]entry),
	}
}

func at(address string) string {
	if address == "" {
		return ""
	}
	return " at " + address
}

// Key returns the KV key holding shard s's checkpoint.
func (st *Store) Key(s shard.ID) string { return st.keyPrefix + string(s) }

// Close forgets the cache and drops the idle connections of a client the
// store built; later calls return offsets.ErrClosed. A Config.Client stays
// open (it is the caller's). Closing twice is not an error.
func (st *Store) Close() error {
	if st.closed.Swap(true) {
		return nil
	}
	st.mu.Lock()
	st.known = nil
	st.mu.Unlock()
	if st.transport != nil {
		st.transport.CloseIdleConnections()
	}
	return nil
}

// Fence raises the shard's floor to token; see offsets.Store.
func (st *Store) Fence(ctx context.Context, s shard.ID, token shard.Token) error {
	return st.update(ctx, "fence", s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) {
		return offsets.ApplyFence(cp, s, token)
	})
}

// Commit stores offset for the shard unless token is below its floor; see
// offsets.Store.
func (st *Store) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	return st.update(ctx, "commit", s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) {
		return offsets.ApplyCommit(cp, s, token, offset)
	})
}

// check refuses a call before any request: bad arguments (worded as in
// every backend), a done context, a closed store, a shard ID that cannot
// be a key.
func (st *Store) check(ctx context.Context, op string, s shard.ID, apply func(offsets.Checkpoint) (offsets.Checkpoint, error)) error {
	if apply != nil {
		// On the zero checkpoint only argument errors are possible: the
		// floor is 0 and a valid token is at least 1.
		if _, err := apply(offsets.Checkpoint{}); err != nil {
			return err
		}
	}
	if err := ctxErr(ctx, op, s); err != nil {
		return err
	}
	if st.closed.Load() {
		return offsets.ErrClosed
	}
	if err := offsets.ValidShard(s); err != nil {
		return err
	}
	return offsets.ValidKeyShard(s)
}

// update is the atomic step: apply the rule to the checkpoint as of a
// ModifyIndex, and write the result with a CAS on that index. If someone
// wrote in between, the CAS fails, the key is read again and the rule
// applied again; a commit is never lost to a conflict, only retried.
func (st *Store) update(parent context.Context, op string, s shard.ID, apply func(offsets.Checkpoint) (offsets.Checkpoint, error)) error {
	if err := st.check(parent, op, s, apply); err != nil {
		return err
	}
	ctx, cancel := consulkv.WithRequestTimeout(parent, st.timeout)
	defer cancel()
	e, ok := st.cached(s)
	for try := 0; ; try++ {
		if !ok {
			var err error
			if e, err = st.read(ctx, op, s, false); err != nil {
				return err
			}
		}
		next, err := apply(e.cp)
		if err != nil {
			return err // stale: floors only rise, so what we saw is enough
		}
		idx, conflict, err := st.cas(ctx, op, s, next, e.index)
		switch {
		case err != nil:
			st.forget(s)
			return err
		case conflict:
			ok = false // someone wrote since: read again
			if err := backoff(ctx, try); err != nil {
				return st.fail(ctx, op, s, errors.New("gave up after repeated CAS conflicts"), consulkv.KindUnavailable)
			}
			continue
		}
		st.remember(s, entry{cp: next, index: idx})
		return nil
	}
}

// cas writes cp to s's key if its ModifyIndex is still index (0: if it does
// not exist). It returns the new ModifyIndex, or conflict when the index
// had moved.
func (st *Store) cas(ctx context.Context, op string, s shard.ID, cp offsets.Checkpoint, index uint64) (uint64, bool, error) {
	ops := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: st.Key(s), Value: offsets.EncodeRecord(cp), Index: index}}}
	results, txnErrs, err := st.txn(ctx, op, s, ops, true)
	if err != nil {
		return 0, false, err
	}
	if len(txnErrs) > 0 {
		if consulkv.ClassifyRefusal(txnErrs[0].What) == consulkv.RefusedStaleIndex {
			return 0, true, nil
		}
		return 0, false, st.txnFailure(ctx, op, s, txnErrs)
	}
	if len(results) != 1 || results[0].KV == nil {
		return 0, false, fmt.Errorf("offsets/consul: %s shard %s: CAS answered with %d results, want 1", op, s, len(results))
	}
	return results[0].KV.ModifyIndex, false, nil
}

// Load returns the shard's checkpoint, read with consistent mode (the
// leader confirms it still leads), so it reflects every write acknowledged
// before it.
func (st *Store) Load(parent context.Context, s shard.ID) (offsets.Checkpoint, error) {
	if err := st.check(parent, "load", s, nil); err != nil {
		return offsets.Checkpoint{}, err
	}
	ctx, cancel := consulkv.WithRequestTimeout(parent, st.timeout)
	defer cancel()
	e, err := st.read(ctx, "load", s, true)
	if err != nil {
		return offsets.Checkpoint{}, err
	}
	return e.cp, nil
}

// read fetches s's key (a missing key is index 0, not an error),
// remembers it, and returns it.
func (st *Store) read(ctx context.Context, op string, s shard.ID, consistent bool) (entry, error) {
	key := st.Key(s)
	var kv *api.KVPair
	err := st.retry(ctx, op, s, false, func() (err error) {
		kv, _, err = st.kv.Get(ctx, key, consulkv.Query{Consistent: consistent})
		return err
	})
	if err != nil {
		return entry{}, err
	}
	var e entry
	if kv != nil {
		if e.cp, err = offsets.DecodeRecord(s, key, kv.Value, kv.ModifyIndex != 0); err != nil {
			return entry{}, err
		}
		e.index = kv.ModifyIndex
	}
	st.remember(s, e)
	return e, nil
}

// txn sends one transaction (see retry). A rolled-back transaction returns
// Consul's per-operation errors and a nil error.
func (st *Store) txn(ctx context.Context, op string, s shard.ID, ops api.TxnOps, write bool) (api.TxnResults, api.TxnErrors, error) {
	var (
		results api.TxnResults
		txnErrs api.TxnErrors
	)
	err := st.retry(ctx, op, s, write, func() (err error) {
		results, txnErrs, err = st.kv.Txn(ctx, ops)
		return err
	})
	return results, txnErrs, err
}

// retry makes one request, again a few times, with backoff, only while it
// provably did not reach Consul's Raft log (consulkv.KindUnavailable).
func (st *Store) retry(ctx context.Context, op string, s shard.ID, write bool, call func() error) error {
	for try := 0; ; try++ {
		if st.closed.Load() {
			return offsets.ErrClosed
		}
		err := call()
		if err == nil {
			return nil
		}
		k := consulkv.Classify(err, write)
		if k == consulkv.KindUnavailable && try < maxTries && backoff(ctx, try) == nil {
			continue
		}
		return st.fail(ctx, op, s, err, k)
	}
}

// txnFailure describes per-operation errors no caller expected.
func (st *Store) txnFailure(ctx context.Context, op string, s shard.ID, errs api.TxnErrors) error {
	if what, ok := consulkv.PermissionRefusal(errs); ok {
		return st.fail(ctx, op, s, errors.New(what), consulkv.KindPermission)
	}
	return fmt.Errorf("offsets/consul: %s shard %s%s: transaction rolled back: %s", op, s, st.address, strings.Join(consulkv.Rollback(errs), "; "))
}

func (st *Store) cached(s shard.ID) (entry, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.known[s]
	return e, ok
}

// remember keeps e unless a newer index is already known: two goroutines
// may finish out of order.
func (st *Store) remember(s shard.ID, e entry) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.known == nil {
		return // closed
	}
	if old, ok := st.known[s]; !ok || old.index <= e.index {
		st.known[s] = e
	}
}

func (st *Store) forget(s shard.ID) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.known, s)
}

// maxTries bounds the retries of a request that did not reach Consul.
const maxTries = 3

// backoff waits before retry try+1: nothing for the first CAS conflict
// (the read that follows is the useful delay), then a jittered, growing
// delay capped at 100 ms; or returns ctx's error.
func backoff(ctx context.Context, try int) error {
	if try == 0 {
		return ctx.Err()
	}
	base := min(2*time.Millisecond<<min(try, 6), 100*time.Millisecond)
	t := time.NewTimer(base/2 + rand.N(base))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
