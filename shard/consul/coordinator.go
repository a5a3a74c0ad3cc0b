package consul

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// MaxTxnOps is Consul's cap on the operations of one /v1/txn request
// (1.14: 128; a larger transaction is refused with HTTP 413).
const MaxTxnOps = consulkv.MaxTxnOps

// MaxTxnShards is how many shards one transaction locks or unlocks: a lock
// costs two operations (the lock, and the get that reads its token), after
// one that checks the fleet's config (its generation is in the tokens), so
// (MaxTxnOps-1)/2. The embedded coordinator (shard/memory) uses the same number,
// so tokens and write counts look alike in tests and in production.
const MaxTxnShards = (MaxTxnOps - 1) / 2

// Coordinator is shard.Coordinator on a real Consul. Create it with New;
// the zero value is not usable. All methods are safe for concurrent use.
type Coordinator struct {
	cfg       Config
	client    *api.Client     // sessions and agent calls
	kv        consulkv.KV     // every KV call
	transport *http.Transport // ours, so Close can drop idle connections
	prefix    string          // cfg.Prefix + "/"

	mu sync.Mutex
	// sessions remembers what this coordinator knows of the sessions it
	// created (worker, check), saving a lookup per call. Sessions created
	// elsewhere are looked up in Consul when first used.
	sessions map[shard.SessionID]sessionInfo
	// keys reads the fleet's keys, and keeps the config this
	// coordinator runs (fleetkeys.Decoder).
	keys *fleetkeys.Decoder
	// graveyard tracks member keys seen without a session, for deleting
	// them after the grace period (see watch.go).
	graveyard *fleetkeys.DeadMembers
	// locks is the last read of P/shards by a listing (see listing.go),
	// reused while the prefix's index is unchanged.
	locks *lockListing
}

var _ shard.Coordinator = (*Coordinator)(nil)

// The coordinator's parts (shard.Coordinator), each a view of it.
type (
	sessions    struct{ c *Coordinator }
	locks       struct{ c *Coordinator }
	members     struct{ c *Coordinator }
	assignments struct{ c *Coordinator }
	fleet       struct{ c *Coordinator }
)

// Sessions returns the coordinator's sessions (session.go).
func (c *Coordinator) Sessions() shard.Sessions { return sessions{c} }

// Locks returns the coordinator's locks, each shard's and each role's
// (locks.go).
func (c *Coordinator) Locks() shard.Locks { return locks{c} }

// Members returns the coordinator's member registry (members.go,
// member_watch.go, loads.go).
func (c *Coordinator) Members() shard.Members { return members{c} }

// Assignments returns the coordinator's assignment keys (assign.go).
func (c *Coordinator) Assignments() shard.Assignments { return assignments{c} }

// Fleet returns the coordinator's fleet keys and whole view (members.go,
// freeze.go, watch.go).
func (c *Coordinator) Fleet() shard.Fleet { return fleet{c} }

// New validates cfg and returns a coordinator. It does not contact Consul:
// an unreachable agent shows up as shard.ErrUnavailable on the first call.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	client, transport, err := consulkv.Dial(cfg.Connection())
	if err != nil {
		return nil, err
	}
	return &Coordinator{
		cfg:       cfg,
		client:    client,
		kv:        consulkv.New(client),
		transport: transport,
		prefix:    cfg.Prefix + "/",
		keys:      fleetkeys.NewDecoder(fleetkeys.NewLayout(cfg.Prefix), restoreCommand),
		sessions:  make(map[shard.SessionID]sessionInfo),
		graveyard: fleetkeys.NewDeadMembers(cfg.MemberGrace),
	}, nil
}

// Close drops the coordinator's idle connections. It does not end sessions
// (Sessions.Destroy does). Calls after Close still work; they reconnect.
func (c *Coordinator) Close() { c.transport.CloseIdleConnections() }

// SharedBetweenProcesses is true: workers in many processes meet in one
// Consul (shard.Shared).
func (c *Coordinator) SharedBetweenProcesses() bool { return true }

// Prefix returns the fleet's KV prefix.
func (c *Coordinator) Prefix() string { return c.cfg.Prefix }

// Connection returns the coordinator's connection settings, for an
// offsets/consul store that should reach the agent as it does (the same
// address, token, TLS and transport wrapper; the store keeps its own
// connection pool).
func (c *Coordinator) Connection() Connection { return c.cfg.Connection() }

// DeleteFleet deletes every key under the fleet's prefix: config,
// members, shard keys, assignments and offsets. It is for tests,
// benchmarks and examples that made a fleet of their own and clean up
// after it, once its workers have stopped; on a live fleet it would reset
// every floor (a fenced store's keys) and every token's history.
func (c *Coordinator) DeleteFleet(ctx context.Context) error {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	return c.fail(ctx, "delete fleet", c.kv.DeleteTree(ctx, c.prefix))
}

// opCtx bounds one call by RequestTimeout on top of the caller's ctx; its
// cause tells that bound from the caller's end (consulkv.CallerCause).
func (c *Coordinator) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return consulkv.WithRequestTimeout(ctx, c.cfg.RequestTimeout)
}

// ctxErr returns the reason ctx ended, or nil while it is live.
func ctxErr(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// now is the coordinator's clock for the times it writes into values and
// for member grace periods. Consul's own timers (TTLs, lock-delay) run on
// the servers.
func now() time.Time { return time.Now() }

// restoreCommand is the Consul command that writes value to key, for the
// hints of fleetkeys' problems.
func restoreCommand(key string, value []byte) string {
	return fmt.Sprintf("consul kv put %s '%s'", key, value)
}
