package consul

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
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
	// fleet is the config Configure settled: the one this coordinator's
	// worker runs, whatever P/config says later (see fleetconfig.go).
	fleet *shardSet
	// stored caches the shard set of the last stored config read by a
	// coordinator that was never configured.
	stored *shardSet
	// dead tracks member keys seen without a session, for deleting them
	// after the grace period (see watch.go).
	dead map[string]deadMember
	// owners are the shard values decoded by the latest listing, by key
	// (see decode).
	owners map[string]decodedOwner
	// locks is the last read of P/shards by a listing (see listing.go),
	// reused while the prefix's index is unchanged.
	locks *lockListing
	// seenGen is the highest fleet generation this coordinator has read
	// (P/config, its own raises), for the restore hint it prints when
	// P/config is deleted or rewritten under the fleet.
	seenGen atomic.Uint32
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
		sessions:  make(map[shard.SessionID]sessionInfo),
		dead:      make(map[string]deadMember),
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

// The fleet's keys (see the package doc).
func (c *Coordinator) configKey() string           { return c.prefix + "config" }
func (c *Coordinator) memberKey(id string) string  { return c.prefix + "members/" + id }
func (c *Coordinator) shardKey(id shard.ID) string { return c.lockKey(shard.ShardLock(id)) }
func (c *Coordinator) lockKey(l shard.Lock) string { return c.prefix + string(l) }
func (c *Coordinator) assignorKey() string         { return c.lockKey(shard.AssignorLock) }

// assignDir is the directory of worker's assignment: its key, "shards",
// and the assignor's memory about it, "memory", written together.
func (c *Coordinator) assignDir(worker string) string { return c.prefix + "assign/" + worker + "/" }
func (c *Coordinator) assignKey(worker string) string { return c.assignDir(worker) + "shards" }
func (c *Coordinator) memoryKey(worker string) string { return c.assignDir(worker) + "memory" }

func (c *Coordinator) lockOfKey(key string) shard.Lock {
	return shard.Lock(strings.TrimPrefix(key, c.prefix))
}

func (c *Coordinator) isMemberKey(key string) bool {
	return strings.HasPrefix(key, c.prefix+"members/")
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
