package worker

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/internal/logging"
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
	// Zone is the failure domain the worker runs in ("eu-west-1a"), and
	// Labels its other facts ("disk": "ssd"), written into its member key
	// (shard.Member.Zone, Labels; checked by shard.ValidateZone and
	// ValidateLabels). The assignor keeps each zone's share of shards in
	// proportion to its capacity. Empty: no zone.
	Zone   string
	Labels map[string]string

	// Fleet is the shard set. It must equal the fleet's stored config.
	Fleet shard.Config
	// Coordinator is the lock service. Required.
	Coordinator shard.Coordinator
	// Offsets is the fenced offset store. Required. Every worker of a fleet
	// must see the same store: a store only this process sees
	// (offsets.Local: offsets/memory, offsets/bolt) beside a coordinator
	// processes share (shard.Shared: shard/consul) is refused, since a
	// shard's next owner in another process would start from offset 0 and
	// its fence would not stop this one, unless LocalOffsets says that the
	// whole fleet runs in this process.
	Offsets offsets.Store
	// LocalOffsets accepts a process-local Offsets store beside a shared
	// coordinator: every worker of the fleet runs in this process, or the
	// offsets may be lost (a benchmark, a demo).
	LocalOffsets bool
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
	// handlers run one shard. Zero: DefaultDrainTimeout.
	DrainTimeout time.Duration
	// RejoinGrace, when positive, makes a stop (ctx ending) a restart: the
	// worker drains and releases its shards as always, but first writes
	// on its member key that it will be back within RejoinGrace
	// (shard.Member.RejoinUntil). The assignor then keeps its shards for
	// it, idle, until then, and a worker with the same ID that joins
	// within the grace gets exactly those shards back: no hand-off away
	// and back. Past the grace, or after a crash, they go to others as
	// without it. Zero: none, the shards are handed off at once (see
	// docs/operations.md, "Rolling restarts").
	RejoinGrace time.Duration
	// DrainBeforeStop, when positive and RejoinGrace is zero, makes a stop
	// (ctx ending) first drain the worker as `shardctl drain` does: it
	// marks its member key draining and keeps running, its handlers
	// processing, while the assignor moves its shards away in waves of the
	// move budget — warm where the new owners run standbys (Standby), each
	// prepared there before it is handed off — for at most this long; then
	// it stops as without it, releasing what is left at once. A stop that
	// finds nothing to hand off stops at once. Zero: every shard is
	// released at the stop, and starts cold on its next owner.
	DrainBeforeStop time.Duration
	// LoadBalance, when not nil, is this worker's proposal that the fleet
	// balance load rather than shard counts, with these tunables (zero
	// fields take their defaults): it is stored as the fleet's balance
	// policy (shard.BalancePolicy, P/policy) when the fleet stores none,
	// together with MaxMovesInFlight, StuckAfter and ColdStartGather, and
	// followed by this worker as the assignor only while none is stored.
	// The fleet's stored policy, changed with shardctl balance, is what
	// every assignor follows. Nil: count balance.
	LoadBalance *shard.LoadBalance
	// ShardWeight, when not nil, is each shard's static weight for load
	// balancing: the assignor multiplies the shard's measured load by it,
	// and while nothing is measured balances the weights alone. It must
	// return a finite number ≥ 0 for every shard of the fleet (New calls it
	// for each) and the same on every worker. Nil: every shard weighs 1.
	ShardWeight func(shard.ID) float64
	// LoadReportEvery is how often the worker samples its shards' smoothed
	// loads and, when they changed by more than 5 % of its total, writes
	// them to its loads key (shard.Members.ReportLoad): one write per
	// interval, plus at most one brought forward when a shard's load moves
	// to a new level (see LoadHalfLife), and none
	// while nothing changed, so the assignor, woken by every such write,
	// is not kept busy by a large fleet. At least a second. Zero:
	// DefaultLoadReportEvery while the assignor asks for loads (the
	// fleet's policy balances load), and no writes while it does not (a
	// count-balanced fleet's coordinator traffic stays as it was);
	// NoLoadReport (any negative value): no writes.
	LoadReportEvery time.Duration
	// LoadHalfLife is the half-life of the smoothing of each shard's load
	// (Claim.ReportLoad, or the commit rate): a step change is half seen
	// after one half-life and 7/8 after three, unless it is a new level,
	// taken at once: beyond 1.5 × or ÷ the smoothed figure, or more than
	// 5 % on a shard whose load was steady (docs/operations.md,
	// "Smoothing").
	// Zero: DefaultLoadHalfLife.
	LoadHalfLife time.Duration
	// MaxMovesInFlight caps the hand-offs in flight across the fleet
	// (rebalance.Policy): this worker's proposal for the fleet's balance
	// policy, as LoadBalance is. Zero: the default,
	// rebalance.DefaultMaxMovesInFlight.
	MaxMovesInFlight int
	// StuckAfter: a worker whose assignment lists free shards and that
	// takes none of them for this long is judged stuck (rebalance.Policy);
	// a proposal for the fleet's balance policy, as LoadBalance is. The assignor uses at least
	// the TTL plus the lock-delay plus two renewal intervals: see
	// EffectiveStuckAfter. Zero: rebalance.DefaultStuckAfter.
	StuckAfter time.Duration
	// ColdStartGather (a proposal for the fleet's balance policy, as
	// LoadBalance is) bounds how long the assignor of a cold fleet (no
	// shard held, nothing assigned) waits for members to stop joining
	// before it places the shards: it places them once no member has
	// joined or left for 300 ms, or when this has passed, so that workers
	// started together each get their share at once rather than by
	// hand-offs from the first ones up. A running fleet is never delayed.
	// Zero: DefaultColdStartGather; NoColdStartGather (any negative value):
	// place at once.
	ColdStartGather time.Duration
	// WatchCoalesce is the least time between the starts of two reads of
	// a watch (the worker's assignment key, the assignor's listing of the
	// fleet: shard.FollowOptions.MinSpacing), so a burst of changes costs
	// one reconcile or one step per WatchCoalesce, and one more at its
	// start after a quiet spell. Zero: DefaultWatchCoalesce.
	WatchCoalesce time.Duration

	// Registerer receives the worker's metrics (labelled worker=ID). Nil
	// means the metrics are kept but not exported.
	Registerer prometheus.Registerer
	// StartTimeout bounds how long Run may take to join the fleet for the
	// first time (the coordinator reached, the config checked, the member
	// key written): past it Run returns an error wrapping ErrNotJoined that
	// says what it waited on. Zero: Run waits as long as its context lets
	// it (Ready and Status.Waiting say meanwhile). A worker that has joined
	// once rejoins after a loss without this limit.
	StartTimeout time.Duration
	// Logger receives structured logs. Slog is the same for a program that
	// logs with log/slog: the worker's logs go through its handler, at its
	// levels; it is used when Logger is nil. With neither, warnings and
	// errors (an unreachable coordinator, a duplicate ID, a lost shard) go
	// to slog.Default(), so that a worker that cannot work says so.
	Logger *zap.Logger
	Slog   *slog.Logger
	// JitterSeed seeds the worker's jitter; 0 picks a random seed.
	JitterSeed uint64
}

// Defaults of the zero values of Config, and the one value that turns the
// cold-start gather off.
const (
	DefaultDrainTimeout    = 10 * time.Second
	DefaultColdStartGather = assignor.DefaultColdStartGather
	// MaxRejoinGrace is the longest rejoin grace a worker may ask for: the
	// longest the assignor honours (assignor.MaxRejoinGrace).
	MaxRejoinGrace = assignor.MaxRejoinGrace
	// MaxDrainBeforeStop bounds Config.DrainBeforeStop: a stop that waits
	// longer is a stuck stop.
	MaxDrainBeforeStop   = time.Hour
	DefaultWatchCoalesce = 25 * time.Millisecond
	// NoColdStartGather as Config.ColdStartGather places a cold fleet's
	// shards at once: for a fleet with nothing to balance (one shard) or
	// whose workers never start together. Zero is the default, not none.
	NoColdStartGather time.Duration = -1
	// DefaultLoadReportEvery is LoadReportEvery's default while the fleet
	// balances load: 100 workers then write at most 20 loads keys a
	// second between them, 10 unless loads keep shifting level
	// (docs/operations.md, "Balancing load").
	DefaultLoadReportEvery = 10 * time.Second
	// MinLoadReportEvery is the shortest LoadReportEvery accepted.
	MinLoadReportEvery = time.Second
	// NoLoadReport as Config.LoadReportEvery writes no loads key even
	// while the fleet balances load (the assignor then
	// balances the static weights alone).
	NoLoadReport time.Duration = -1
	// DefaultLoadHalfLife is LoadHalfLife's default: one report interval,
	// so a changed load is mostly carried within two reports while
	// noise that flips every few seconds is damped.
	DefaultLoadHalfLife = 10 * time.Second
)

// carriesLoad reports whether the worker writes its shards' loads to its
// loads key: when configured to, or, by default, while its assignment key
// asks (asked: the policy the assignor follows balances load). Its own
// LoadBalance does not decide: the fleet's policy does.
func (c Config) carriesLoad(asked bool) bool {
	return c.LoadReportEvery > 0 || (c.LoadReportEvery == 0 && asked)
}

// balancePolicy is the balancing policy this worker proposes to a fleet
// that stores none, and follows as the assignor while none is stored.
func (c Config) balancePolicy() shard.BalancePolicy {
	p := shard.BalancePolicy{MaxMovesInFlight: c.MaxMovesInFlight, StuckAfter: c.StuckAfter, ColdStartGather: c.ColdStartGather}
	if p.ColdStartGather == DefaultColdStartGather {
		p.ColdStartGather = 0 // the default, as shardctl writes it: not pinned into the fleet's key
	}
	if lb := c.LoadBalance; lb != nil {
		l := *lb // the proposal must not change with the caller's struct
		p.Load = &l
	}
	return p
}

// loadEvery is the interval of the worker's load sampling.
func (c Config) loadEvery() time.Duration {
	if c.LoadReportEvery > 0 {
		return c.LoadReportEvery
	}
	return DefaultLoadReportEvery
}

// EffectiveStuckAfter is the StuckAfter the assignor judges by: the
// configured value, raised to the longest a healthy worker may need to
// take a shard it was given under the worker's lease policy
// (assignor.StuckAfter).
func (c Config) EffectiveStuckAfter() time.Duration {
	return assignor.StuckAfter(c.StuckAfter, c.withDefaults().Policy)
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
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.WatchCoalesce == 0 {
		c.WatchCoalesce = DefaultWatchCoalesce
	}
	if c.ColdStartGather == 0 {
		c.ColdStartGather = DefaultColdStartGather
	}
	if c.LoadHalfLife == 0 {
		c.LoadHalfLife = DefaultLoadHalfLife
	}
	switch {
	case c.Logger != nil:
	case c.Slog != nil:
		c.Logger = logging.FromSlog(c.Slog)
	default:
		c.Logger = logging.FromSlogAt(slog.Default(), zapcore.WarnLevel)
	}
	return c
}

// Validate reports every problem with c (after defaults) at once: its
// settings (ValidateSettings) and its dependencies, which must not be nil.
func (c Config) Validate() error {
	problems := c.settingsProblems()
	if c.Coordinator == nil {
		problems = append(problems, "coordinator is nil")
	}
	if c.Offsets == nil {
		problems = append(problems, "offset store is nil")
	}
	if local, ok := c.Offsets.(offsets.Local); ok && local.ProcessLocal() && !c.LocalOffsets {
		if shared, ok := c.Coordinator.(shard.Shared); ok && shared.SharedBetweenProcesses() {
			problems = append(problems, fmt.Sprintf("offset store %T keeps offsets in this process only, but the coordinator %T is shared between processes: "+
				"a shard's next owner elsewhere would start from offset 0 and the fence would not stop this worker; "+
				"use a shared store (offsets/postgres, offsets/consul), or set LocalOffsets if every worker of the fleet runs in this process", c.Offsets, c.Coordinator))
		}
	}
	if c.Handler == nil {
		problems = append(problems, "handler is nil")
	}
	return invalid(problems)
}

// ValidateSettings reports every problem with c's values (after defaults)
// at once, ignoring Coordinator, Offsets and Handler: for a program that
// checks its command line before it opens any of them. New still needs
// them.
func (c Config) ValidateSettings() error { return invalid(c.settingsProblems()) }

func invalid(problems []string) error {
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}

func (c Config) settingsProblems() []string {
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
	if err := shard.ValidateZone(c.Zone); err != nil {
		add("%v", err)
	}
	if err := shard.ValidateLabels(c.Labels); err != nil {
		add("%v", err)
	}
	if err := c.Fleet.Validate(); err != nil {
		add("%v", err)
	}
	if err := c.Policy.Validate(); err != nil {
		add("%v", err)
	}
	if c.StartTimeout < 0 {
		add("start timeout %v must not be negative (zero means no limit)", c.StartTimeout)
	}
	for _, d := range []struct {
		name    string
		v, zero time.Duration
	}{{"drain timeout", c.DrainTimeout, DefaultDrainTimeout}, {"stuck after", c.StuckAfter, rebalance.DefaultStuckAfter},
		{"watch coalesce", c.WatchCoalesce, DefaultWatchCoalesce}} {
		if d.v < 0 {
			add("%s %v must not be negative (zero means the default, %v)", d.name, d.v, d.zero)
		}
	}
	if c.DrainBeforeStop < 0 || c.DrainBeforeStop > MaxDrainBeforeStop {
		add("drain before stop %v must be between 0 (none: shards are released at a stop) and %v", c.DrainBeforeStop, MaxDrainBeforeStop)
	} else if c.DrainBeforeStop > 0 && c.RejoinGrace > 0 {
		add("drain before stop %v and rejoin grace %v: a restart keeps its shards for the return, so there is nothing to drain; set one of them", c.DrainBeforeStop, c.RejoinGrace)
	}
	if c.RejoinGrace < 0 {
		add("rejoin grace %v must not be negative (zero means none: shards are handed off at a stop)", c.RejoinGrace)
	} else if c.RejoinGrace > MaxRejoinGrace {
		add("rejoin grace %v is longer than %v, the longest the assignor honours (its shards would sit idle)", c.RejoinGrace, MaxRejoinGrace)
	}
	if c.MaxMovesInFlight < 0 {
		add("max moves in flight %d must not be negative", c.MaxMovesInFlight)
	}
	return append(problems, c.loadProblems()...)
}
