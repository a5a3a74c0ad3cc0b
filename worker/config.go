package worker

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// Config configures a Worker. The zero value of every optional field selects
// the documented default; New never modifies the caller's Config.
type Config struct {
	// ID names the worker in the fleet. Required, unique among live workers.
	ID string
	// Weight is the worker's relative share of shards. Default 1.
	Weight int
	// Address and Version are shown to operators.
	Address, Version string

	// Fleet is the shard set. It must equal the fleet's stored config.
	Fleet shard.Config
	// Coordinator is the lock service. Required.
	Coordinator shard.Coordinator
	// Offsets is the fenced offset store. Required.
	Offsets offsets.Store
	// Handler processes one owned shard. Required.
	Handler Handler

	// Policy is the lease policy: TTL, renewal interval, pause budget and
	// the lock-delay of the worker's sessions, which Validate checks against
	// both of its rules (shard.LeasePolicy). Default shard.DefaultPolicy.
	Policy shard.LeasePolicy
	// DrainTimeout bounds how long a revoked handler may take to return.
	// When it passes, the claim is lost (Claim.Lost closes and Commit
	// refuses) and the handler must return at once; the lock is released
	// only after the handler has returned, so a hand-off never lets two
	// handlers run one shard. Default 10 s.
	DrainTimeout time.Duration
	// MaxMovesInFlight caps the hand-offs in flight across the fleet when
	// this worker is the assignor (rebalance.Policy). Zero: the default,
	// rebalance.DefaultMaxMovesInFlight. Every worker of a fleet should
	// have the same, since any of them may become the assignor.
	MaxMovesInFlight int
	// StuckAfter: when this worker is the assignor, a worker whose
	// assignment lists free shards and that takes none of them for this
	// long is judged stuck (rebalance.Policy). The assignor uses at least
	// the TTL plus the lock-delay plus two renewal intervals: see
	// EffectiveStuckAfter. Zero: rebalance.DefaultStuckAfter.
	StuckAfter time.Duration
	// ColdStartGather bounds how long the assignor of a cold fleet (no
	// shard held, nothing assigned) waits for members to stop joining
	// before it places the shards: it places them once no member has
	// joined or left for 300 ms, or when this has passed, so that workers
	// started together each get their share at once rather than by
	// hand-offs from the first ones up. A running fleet is never delayed.
	// Zero: 3 s; negative: place at once.
	ColdStartGather time.Duration
	// WatchCoalesce is the minimum time between two wake-ups of a watch
	// (the worker's assignment key, the assignor's listing of the fleet),
	// so a burst of changes costs one reconcile or one step. Default 25 ms.
	WatchCoalesce time.Duration

	// Registerer receives the worker's metrics (labelled worker=ID). Nil
	// means the metrics are kept but not exported.
	Registerer prometheus.Registerer
	// Logger receives structured logs. Default zap.NewNop().
	Logger *zap.Logger
	// JitterSeed seeds the worker's jitter; 0 picks a random seed.
	JitterSeed uint64
}

// EffectiveStuckAfter is the StuckAfter the assignor judges by: the
// configured value (or rebalance.DefaultStuckAfter), or the longest a
// healthy worker may need to take a shard it was given when that is longer.
// The assignor gives out a shard as soon as no live member's current
// session holds it, which covers two waits: a lock freed by a session that
// ended stays closed for its lock-delay; and a lock still held by a previous
// session of a worker that rejoined opens only once that session expired
// (up to a TTL) and its lock-delay is over. The worker retries a refused
// shard one lock-delay after the first refusal, then every renewal interval
// (retryRefused), so it takes such a shard at most a renewal interval after
// it opens; one more is left for the acquisition. Judged sooner, a healthy
// worker is marked stuck and given nothing for the rest of its session
// (docs/reliability.md, "What it found").
func (c Config) EffectiveStuckAfter() time.Duration {
	p := c.withDefaults().Policy
	ld := p.EffectiveLockDelay()
	stuck := c.StuckAfter
	if stuck <= 0 {
		stuck = rebalance.DefaultStuckAfter
	}
	return max(stuck, 2*ld+p.RenewEvery, p.TTL+ld+2*p.RenewEvery)
}

func (c Config) withDefaults() Config {
	if c.Weight == 0 {
		c.Weight = 1
	}
	c.Fleet = c.Fleet.Normalize()
	if c.Policy == (shard.LeasePolicy{}) {
		c.Policy = shard.DefaultPolicy
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 10 * time.Second
	}
	if c.WatchCoalesce == 0 {
		c.WatchCoalesce = 25 * time.Millisecond
	}
	if c.ColdStartGather == 0 {
		c.ColdStartGather = 3 * time.Second
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Validate reports every problem with c (after defaults) at once.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if strings.TrimSpace(c.ID) == "" {
		add("worker id %q is empty", c.ID)
	} else if strings.ContainsAny(c.ID, "/ \t\n") {
		add("worker id %q must not contain '/' or spaces", c.ID)
	}
	if c.Weight < 0 {
		add("weight %d must not be negative", c.Weight)
	}
	if err := c.Fleet.Validate(); err != nil {
		add("%v", err)
	}
	if err := c.Policy.Validate(); err != nil {
		add("%v", err)
	}
	if c.Coordinator == nil {
		add("coordinator is nil")
	}
	if c.Offsets == nil {
		add("offset store is nil")
	}
	if c.Handler == nil {
		add("handler is nil")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"drain timeout", c.DrainTimeout}, {"stuck after", c.StuckAfter}, {"watch coalesce", c.WatchCoalesce}} {
		if d.v < 0 {
			add("%s %v must not be negative", d.name, d.v)
		}
	}
	if c.MaxMovesInFlight < 0 {
		add("max moves in flight %d must not be negative", c.MaxMovesInFlight)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}
