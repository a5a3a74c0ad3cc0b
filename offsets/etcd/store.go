package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// DefaultRequestTimeout bounds one call when Config.RequestTimeout is zero.
const DefaultRequestTimeout = 10 * time.Second

// MaxShardLen bounds a shard ID in bytes: it becomes part of a key.
const MaxShardLen = offsets.MaxKeyShardLen

// Config says which etcd and which fleet.
type Config struct {
	// Client reaches etcd; the store uses it and never closes it.
	// Required.
	Client *clientv3.Client
	// Prefix is the fleet's key prefix P: offsets live under P/offsets/.
	// Required; no leading or trailing '/'.
	Prefix string
	// RequestTimeout bounds every call, on top of the caller's context,
	// retries of conflicting writes included. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// Validate reports every problem with c at once, wrapping
// shard.ErrInvalidArgument.
func (c Config) Validate() error {
	var problems []string
	if c.Client == nil {
		problems = append(problems, "no Client: pass the process's etcd client (clientv3.New)")
	}
	if p := fleetkeys.PrefixProblem(c.Prefix); p != "" {
		problems = append(problems, p)
	}
	if c.RequestTimeout < 0 {
		problems = append(problems, fmt.Sprintf("request timeout %v must not be negative", c.RequestTimeout))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: offsets/etcd config: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// Store is an offsets.Store in etcd. Create it with New; the zero value is
// not usable. All methods are safe for concurrent use, and many Stores (in
// many processes) may share one prefix.
type Store struct {
	kv        clientv3.KV
	keyPrefix string // P/offsets/
	timeout   time.Duration
	closed    atomic.Bool
}

var _ offsets.Store = (*Store)(nil)

// New validates cfg and returns a store. It does not contact etcd: an
// unreachable cluster shows up as an error of the first call.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	return &Store{kv: cfg.Client.KV, keyPrefix: cfg.Prefix + "/offsets/", timeout: timeout}, nil
}

// Key returns the key holding shard s's checkpoint.
func (st *Store) Key(s shard.ID) string { return st.keyPrefix + string(s) }

// Close makes later calls return offsets.ErrClosed; the client stays open
// (it is the caller's). Closing twice is not an error.
func (st *Store) Close() error {
	st.closed.Store(true)
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

// Load returns the shard's checkpoint, read linearizably: it reflects every
// write acknowledged before it.
func (st *Store) Load(parent context.Context, s shard.ID) (offsets.Checkpoint, error) {
	if err := st.check(parent, "load", s, nil); err != nil {
		return offsets.Checkpoint{}, err
	}
	ctx, cancel := st.withTimeout(parent)
	defer cancel()
	cp, _, err := st.read(ctx, "load", s)
	return cp, err
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
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("offsets/etcd: %s shard %s: %w", op, s, withCause(ctx, err))
	}
	if st.closed.Load() {
		return offsets.ErrClosed
	}
	if err := offsets.ValidShard(s); err != nil {
		return err
	}
	return offsets.ValidKeyShard(s)
}

// read fetches s's key: its checkpoint and ModRevision (0: the key does
// not exist).
func (st *Store) read(ctx context.Context, op string, s shard.ID) (offsets.Checkpoint, int64, error) {
	key := st.Key(s)
	resp, err := st.kv.Get(ctx, key)
	if err != nil {
		return offsets.Checkpoint{}, 0, st.fail(ctx, op, s, err, false)
	}
	if len(resp.Kvs) == 0 {
		return offsets.Checkpoint{}, 0, nil
	}
	kv := resp.Kvs[0]
	cp, err := offsets.DecodeRecord(s, key, kv.Value, true)
	return cp, kv.ModRevision, err
}

// update is the atomic step: apply the rule to the checkpoint as of a
// ModRevision, and write the result in a transaction that compares that
// revision. If someone wrote in between, the transaction does nothing, the
// key is read again and the rule applied again: a commit is never lost to
// a conflict, only retried.
func (st *Store) update(parent context.Context, op string, s shard.ID, apply func(offsets.Checkpoint) (offsets.Checkpoint, error)) error {
	if err := st.check(parent, op, s, apply); err != nil {
		return err
	}
	ctx, cancel := st.withTimeout(parent)
	defer cancel()
	key := st.Key(s)
	for try := 0; ; try++ {
		if st.closed.Load() {
			return offsets.ErrClosed
		}
		cp, rev, err := st.read(ctx, op, s)
		if err != nil {
			return err
		}
		next, err := apply(cp)
		if err != nil {
			return err // stale: floors only rise, so what was read is enough
		}
		if next == cp {
			return nil // a fence at the floor, a commit of what is there: nothing to write
		}
		resp, err := st.kv.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, string(offsets.EncodeRecord(next)))).
			Commit()
		if err != nil {
			return st.fail(ctx, op, s, err, true)
		}
		if resp.Succeeded {
			return nil
		}
		if err := backoff(ctx, try); err != nil {
			return st.fail(ctx, op, s, errors.New("gave up after repeated conflicting writes"), false)
		}
	}
}

// fail builds the error for a failed request about shard s. A write that
// may have reached etcd is offsets.ErrOutcomeUnknown; a read, or a write
// etcd refused before applying it, is offsets.ErrUnavailable. A context
// its caller ended adds its error and cause.
func (st *Store) fail(ctx context.Context, op string, s shard.ID, err error, write bool) error {
	where := fmt.Sprintf("offsets/etcd: %s shard %s", op, s)
	if cerr := ctx.Err(); cerr != nil {
		// The client returns the context's error itself: add it when it
		// is not there, and its cause (the caller's, or the store's
		// timeout) either way, so a handler can tell revoked from lost.
		if !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", err, cerr)
		}
		err = withCause(ctx, err)
	}
	if write && !refusedBeforeApplying(err) {
		return fmt.Errorf("%w: %s: the write was sent but no answer came back, so it may or may not have been applied: %w", offsets.ErrOutcomeUnknown, where, err)
	}
	return fmt.Errorf("%w: %s: %w", offsets.ErrUnavailable, where, err)
}

// refusedBeforeApplying reports whether etcd answered err before any
// write could be applied: no leader, or too many requests.
func refusedBeforeApplying(err error) bool {
	for _, e := range []error{rpctypes.ErrNoLeader, rpctypes.ErrGRPCNoLeader, rpctypes.ErrTooManyRequests, rpctypes.ErrGRPCRequestTooManyRequests} {
		if errors.Is(err, e) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(e) {
			return true
		}
	}
	return false
}

// errStoreTimeout is the cause of a call's end when Config.RequestTimeout
// passed before the caller's context ended.
var errStoreTimeout = errors.New("offsets/etcd: the store's request timeout passed")

// withTimeout bounds a call by the store's request timeout, whose end has
// cause errStoreTimeout; the caller's own end keeps its cause.
func (st *Store) withTimeout(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, st.timeout, fmt.Errorf("%w (%v)", errStoreTimeout, st.timeout))
}

// withCause adds ctx's cause to err when it says more.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && cause != err && !errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// backoff waits before retry try+1: nothing for the first conflict (the
// read that follows is the useful delay), then a jittered, growing delay
// capped at 100 ms; or returns ctx's error.
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
