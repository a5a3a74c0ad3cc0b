package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// MaxTxnShards is how many shards one transaction locks or unlocks. etcd
// refuses a transaction of more than 128 compares, or 128 operations in
// one branch (--max-txn-ops): a lock costs one compare and one put, after
// the compares of the config and the session, and the read before it one
// get per lock beside the config's and the session's. 126 fills that: a
// worker of a fleet of 1,000 over 100,000 shards takes its share in one
// transaction, where 64 a transaction cost it two (and its assignment
// key a rewrite after each, as its free shards went from 100 to 36 to 0).
const MaxTxnShards = 126

// MaxTxnAssignments is how many workers' assignments one Assign
// transaction writes: two puts (or deletes) per worker.
const MaxTxnAssignments = 63

// Coordinator is shard.Coordinator on a real etcd. Create it with New;
// the zero value is not usable. All methods are safe for concurrent use.
type Coordinator struct {
	cfg    Config
	cli    *clientv3.Client
	keys   *fleetkeys.Decoder
	ctx    context.Context // ends with Close: the fleet mirror's life
	cancel context.CancelFunc

	mu sync.Mutex
	// dead remembers, for each session found dead, when this coordinator
	// first knew it: a lock it held opens a lock-delay after that
	// (session.go).
	dead map[shard.SessionID]time.Time
	// granted is, for each lock this coordinator took, the session and the
	// revision it took it at (locks.go): a lock naming a session counts
	// as that session's own only if it is in here, so that an envelope
	// written by hand naming a session never hands it a lock.
	granted map[string]grant
	// mirror is the fleet's keys as the watch of the prefix keeps them,
	// started by the first Fleet.Watch (mirror.go).
	mirror *mirror
	// graveyard tracks dead member keys for deletion (fleet.go).
	graveyard *fleetkeys.DeadMembers
}

var (
	_ shard.Coordinator = (*Coordinator)(nil)
	_ shard.Shared      = (*Coordinator)(nil)
)

// The coordinator's parts (shard.Coordinator), each a view of it.
type (
	sessions    struct{ c *Coordinator }
	locks       struct{ c *Coordinator }
	members     struct{ c *Coordinator }
	assignments struct{ c *Coordinator }
	fleet       struct{ c *Coordinator }
	history     struct{ c *Coordinator }
)

func (c *Coordinator) Sessions() shard.Sessions       { return sessions{c} }
func (c *Coordinator) Locks() shard.Locks             { return locks{c} }
func (c *Coordinator) Members() shard.Members         { return members{c} }
func (c *Coordinator) Assignments() shard.Assignments { return assignments{c} }
func (c *Coordinator) Fleet() shard.Fleet             { return fleet{c} }
func (c *Coordinator) History() shard.History         { return history{c} }

// New validates cfg and returns a coordinator. It does not contact etcd:
// an unreachable cluster shows up as shard.ErrUnavailable on the first
// call.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Coordinator{
		cfg:       cfg,
		cli:       cfg.Client,
		keys:      fleetkeys.NewDecoder(fleetkeys.NewLayout(cfg.Prefix), restoreCommand),
		ctx:       ctx,
		cancel:    cancel,
		dead:      make(map[shard.SessionID]time.Time),
		granted:   make(map[string]grant),
		graveyard: fleetkeys.NewDeadMembers(cfg.MemberGrace),
	}, nil
}

// Close stops the coordinator's watch of the fleet; it does not end
// sessions (Sessions.Destroy does) nor close the client (the caller's).
func (c *Coordinator) Close() {
	c.cancel()
	c.mu.Lock()
	m := c.mirror
	c.mu.Unlock()
	if m != nil {
		<-m.done
	}
}

// SharedBetweenProcesses is true: workers in many processes meet in one
// etcd (shard.Shared).
func (c *Coordinator) SharedBetweenProcesses() bool { return true }

// Prefix returns the fleet's key prefix.
func (c *Coordinator) Prefix() string { return c.cfg.Prefix }

// Client returns the etcd client the coordinator uses, for an offsets/etcd
// store beside it.
func (c *Coordinator) Client() *clientv3.Client { return c.cli }

// DeleteFleet deletes every key under the fleet's prefix, sessions' keys
// included (their leases live on until they expire or are revoked). It is
// for tests, benchmarks and examples that made a fleet of their own and
// clean up after it, once its workers have stopped.
func (c *Coordinator) DeleteFleet(ctx context.Context) error {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	_, err := c.cli.Delete(ctx, c.keys.Dir(), clientv3.WithPrefix())
	return c.fail(ctx, "delete fleet", err)
}

// restoreCommand is the etcdctl command that writes value to key, for the
// hints of fleetkeys' problems.
func restoreCommand(key string, value []byte) string {
	return fmt.Sprintf("etcdctl put %s '%s'", key, value)
}

// errRequestTimeout is the cause of a call's end when RequestTimeout
// passed before the caller's context ended.
var errRequestTimeout = errors.New("shard/etcd: the request timeout passed")

// opCtx bounds one call by RequestTimeout on top of the caller's ctx,
// with errRequestTimeout as the cause of that bound.
func (c *Coordinator) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, c.cfg.RequestTimeout, fmt.Errorf("%w (%v)", errRequestTimeout, c.cfg.RequestTimeout))
}

// ctxErr returns the reason ctx ended, or nil while it is live.
func ctxErr(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// fail turns an error from a call to etcd into one of the package's (nil
// stays nil): the cause when the caller ended ctx; otherwise
// shard.ErrUnavailable (etcd cannot be reached, has no leader, or did
// not answer in time), or shard.ErrPermissionDenied for an
// authentication or permission refusal.
func (c *Coordinator) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, errRequestTimeout) {
		return cause
	}
	if refusedAuth(err) {
		return fmt.Errorf("%w: etcd %s: %w; give a user (--etcd-user, ETCDCTL_USER) with readwrite on the key range %q", shard.ErrPermissionDenied, op, err, c.keys.Dir())
	}
	if cause := context.Cause(ctx); cause != nil {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	return fmt.Errorf("%w: etcd %s: %w", shard.ErrUnavailable, op, err)
}

// refusedAuth reports whether etcd refused err's request for its user:
// no permission, a wrong password, no user where authentication is on.
func refusedAuth(err error) bool {
	for _, e := range []error{rpctypes.ErrPermissionDenied, rpctypes.ErrGRPCPermissionDenied, rpctypes.ErrAuthFailed, rpctypes.ErrGRPCAuthFailed,
		rpctypes.ErrUserEmpty, rpctypes.ErrGRPCUserEmpty, rpctypes.ErrInvalidAuthToken, rpctypes.ErrGRPCInvalidAuthToken} {
		if errors.Is(err, e) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(e) {
			return true
		}
	}
	return false
}

// now is the coordinator's clock for the times it writes into values,
// for lock-delays and for member grace periods.
func now() time.Time { return time.Now() }
