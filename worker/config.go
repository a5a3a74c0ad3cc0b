package worker

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/offsets"
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
	// RoundEvery spaces rebalance rounds (±50 % jitter). Over-capacity
	// shards are released only in rounds; a change of members brings the
	// next round forward to within RoundEvery/4. Default 1 s.
	RoundEvery time.Duration
	// MaxMovesPerRound caps the shards this worker hands off per round,
	// unless half its surplus is more (see the package doc). Default 4.
	MaxMovesPerRound int
	// OrphanGrace is how long a free shard waits for its designated
	// acquirer before any other worker may take it (plus up to 100 %
	// jitter), counted from the shard's latest release or expiry. A worker
	// that takes a shard over this way treats its designated acquirer as
	// stuck for 10 orphan graces (or until it rejoins): it hands it no
	// shards and takes over its orphans beyond its own quota, up to
	// MaxMovesPerRound per plan. Default 3 s.
	OrphanGrace time.Duration
	// WatchCoalesce is the minimum time between two watch wake-ups, so a
	// burst of changes costs one re-plan. Default 25 ms.
	WatchCoalesce time.Duration
	// WatchKeyRate bounds what the fleet's watches together ask the
	// coordinator for, in keys per second. Every worker reads the whole
	// prefix on each wake-up, so a burst of changes in a fleet of W live
	// members over K keys costs W·K keys; a worker therefore also waits
	// W·K ÷ WatchKeyRate between two wake-ups. Default 1,000,000: 12
	// workers over 4096 shards wait 49 ms, 100 over 10,000 wait 1 s. A
	// fleet that starts together otherwise lists the prefix W² times while
	// its members join, which at 100 workers saturated a 2-core machine
	// and starved the renewals until the workers stepped down. Negative
	// means no bound.
	WatchKeyRate float64

	// Registerer receives the worker's metrics (labelled worker=ID). Nil
	// means the metrics are kept but not exported.
	Registerer prometheus.Registerer
	// Logger receives structured logs. Default zap.NewNop().
	Logger *zap.Logger
	// JitterSeed seeds the worker's jitter; 0 picks a random seed.
	JitterSeed uint64
}

// DefaultWatchKeyRate is Config.WatchKeyRate's default.
const DefaultWatchKeyRate = 1_000_000

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
	if c.RoundEvery == 0 {
		c.RoundEvery = time.Second
	}
	if c.MaxMovesPerRound == 0 {
		c.MaxMovesPerRound = 4
	}
	if c.OrphanGrace == 0 {
		c.OrphanGrace = 3 * time.Second
	}
	if c.WatchCoalesce == 0 {
		c.WatchCoalesce = 25 * time.Millisecond
	}
	if c.WatchKeyRate == 0 {
		c.WatchKeyRate = DefaultWatchKeyRate
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
	}{{"drain timeout", c.DrainTimeout}, {"round interval", c.RoundEvery}, {"orphan grace", c.OrphanGrace}, {"watch coalesce", c.WatchCoalesce}} {
		if d.v < 0 {
			add("%s %v must not be negative", d.name, d.v)
		}
	}
	if math.IsNaN(c.WatchKeyRate) {
		add("watch key rate %v is not a number", c.WatchKeyRate)
	}
	if c.MaxMovesPerRound < 0 {
		add("max moves per round %d must not be negative", c.MaxMovesPerRound)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}
