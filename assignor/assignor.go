package assignor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/lease"
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// Config configures an Assignor. New never modifies the caller's Config.
type Config struct {
	// Worker is the worker whose session campaigns, named in the lock's
	// value. Required.
	Worker string
	// Fleet is the fleet's shard set. Required.
	Fleet shard.Config
	// Coordinator is the fleet's. Required.
	Coordinator shard.Coordinator
	// Lease is the worker's lease policy: the campaign waits out its
	// lock-delay, and every call is bounded by its intervals. Required.
	Lease shard.LeasePolicy
	// Policy is the balancing policy followed while the fleet stores none
	// (shard.Fleet.SetPolicy): the stored policy, read from every listing,
	// takes its place as soon as it exists, so every candidate follows the
	// same one and an operator changes it live.
	Policy shard.BalancePolicy
	// ShardWeight, when not nil, is each shard's static weight for load
	// balancing. Nil: every shard weighs 1.
	ShardWeight func(shard.ID) float64
	// Coalesce is the least time between two listings, so a burst of
	// changes costs one step. Zero: none.
	Coalesce time.Duration
	// Jitter returns a random duration in [0, d); nil uses math/rand/v2.
	// A worker passes its own seeded jitter, so a simulated fleet replays
	// its waits.
	Jitter func(d time.Duration) time.Duration
	// Registerer receives the assignor's metrics (labelled worker=Worker);
	// nil keeps them unexported. Logger defaults to a no-op.
	Registerer prometheus.Registerer
	Logger     *zap.Logger
}

// Assignor is one worker's part in the fleet's assignor role: it
// campaigns with the worker's session and, while it holds the role, lists
// the fleet, decides with rebalance.Step and writes the assignments.
type Assignor struct {
	cfg Config
	log *zap.Logger
	m   *metrics
	// shards are the fleet's IDs while this worker leads, made when it
	// starts to: every worker has an Assignor, and a process of many
	// workers of a large fleet would otherwise keep them all many times.
	shards []shard.ID
	// universe is the shard set the last step placed (universeOf).
	universe *universe
	loads    loads
	// unplaceable is the last set of shards the rules stranded, logged
	// when it changes.
	unplaceable unplaceable
	// leading is the epoch while this worker holds the role, 0 otherwise.
	leading atomic.Uint64
}

// New validates cfg and returns an Assignor; it registers its metrics and
// contacts nothing.
func New(cfg Config) (*Assignor, error) {
	var problems []string
	if cfg.Worker == "" {
		problems = append(problems, "worker is empty")
	}
	if cfg.Coordinator == nil {
		problems = append(problems, "coordinator is nil")
	}
	if err := cfg.Fleet.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	if err := cfg.Lease.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	if err := cfg.Policy.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %v", shard.ErrInvalidArgument, problems)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func(d time.Duration) time.Duration { return rand.N(d + 1) }
	}
	m, err := newMetrics(cfg.Worker, cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Assignor{cfg: cfg, log: cfg.Logger, m: m, loads: loads{weight: cfg.ShardWeight}}, nil
}

// StuckAfter is the StuckAfter the assignor judges by under lease policy
// p: the configured value (or rebalance.DefaultStuckAfter), or the longest
// a healthy worker may need to take a shard it was given when that is
// longer. The assignor gives out a shard as soon as no live member's
// current session holds it, which covers two waits: a lock freed by a
// session that ended stays closed for its lock-delay; and a lock still
// held by a previous session of a worker that rejoined opens only once
// that session expired (up to a TTL) and its lock-delay is over. A worker
// retries a refused shard one lock-delay after the first refusal, then
// every renewal interval, so it takes such a shard at most a renewal
// interval after it opens; one more is left for the acquisition. Judged
// sooner, a healthy worker is marked stuck and given nothing for the rest
// of its session (docs/reliability.md, "What it found").
func StuckAfter(configured time.Duration, p shard.LeasePolicy) time.Duration {
	ld := p.EffectiveLockDelay()
	if configured <= 0 {
		configured = rebalance.DefaultStuckAfter
	}
	return max(configured, 2*ld+p.RenewEvery, p.TTL+ld+2*p.RenewEvery)
}

// Epoch is the epoch of this worker's term as the assignor, 0 while it
// does not hold the role.
func (a *Assignor) Epoch() shard.Token { return shard.Token(a.leading.Load()) }

// Run is one candidacy: it campaigns for shard.AssignorLock with session
// id until ctx ends (the term's end, or the worker's stop), leading the
// fleet whenever it holds the lock (lease.Campaign). Every worker is a
// candidate, with its own session, so the assignor dies with its worker
// and a worker never holds a second session. Run returns when ctx ends or
// the session is gone; it does not release the lock (Resign does).
func (a *Assignor) Run(ctx context.Context, id shard.SessionID) {
	c := lease.Candidacy{Locks: a.cfg.Coordinator.Locks(), Session: id, Lock: shard.AssignorLock, Policy: a.cfg.Lease,
		Jitter: a.cfg.Jitter, OnError: func(err error) bool {
			a.log.Warn("campaigning for the assignor failed; retrying", zap.Error(err))
			return true
		}}
	_ = lease.Campaign(ctx, c, func(epoch shard.Token) { a.lead(ctx, id, epoch) })
}

// Resign releases the role if session id holds it, at once and without
// lock-delay, so that another candidate takes it while this worker drains.
func (a *Assignor) Resign(ctx context.Context, id shard.SessionID) error {
	return a.cfg.Coordinator.Locks().Release(ctx, id, []shard.Lock{shard.AssignorLock}, shard.ReasonShutdown)
}
