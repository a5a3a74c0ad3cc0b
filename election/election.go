package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/internal/lease"
	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrInvalidConfig: a Config field is wrong; the message lists each.
	ErrInvalidConfig = errors.New("election: invalid config")
)

// DefaultName is the election name used when Config.Name is empty.
const DefaultName = "leader"

// Config configures an Election. The zero value of every optional field
// selects the documented default; New never modifies the caller's Config.
type Config struct {
	// ID names this instance: its session and the lock's value carry it
	// (shard.Owner.Worker), and other instances report it as the leader.
	// Required, without '/' or spaces, unique among live instances.
	ID string
	// Name names the election. Its lock is the role lock
	// shard.RoleLock(Name), the key P/<Name> under the coordinator's
	// prefix, and its checkpoint is kept in Offsets under the ID
	// Name + "-000". It is one path segment of a-z, 0-9 and '-', not a
	// name a worker fleet uses for its own keys (assignor, config,
	// shards, …). Every instance of one election must use the same Name;
	// elections with different names may share a prefix. Default
	// DefaultName.
	Name string
	// Coordinator is the lock service. Required.
	Coordinator shard.Coordinator
	// Offsets keeps the leader's fenced checkpoint (Leadership.Commit,
	// Leadership.Start). Default: a fresh in-memory store, which fences
	// only leaders in this process. Pass a store all instances share when
	// the checkpoint matters across machines.
	Offsets offsets.Store
	// Lead runs while this instance leads. Required. See the package doc.
	Lead func(ctx context.Context, l *Leadership) error
	// OnChange, if set, is called after every change of role, leader or
	// token, in order, from one goroutine at a time. It must return quickly
	// and must not call Run; it may call Status.
	OnChange func(Change)

	// Policy is the lease policy of the instance's session: its TTL,
	// renewal interval, pause budget and lock-delay, checked against both
	// of the policy's rules (shard.LeasePolicy). Default
	// shard.DefaultPolicy.
	Policy shard.LeasePolicy
	// DrainTimeout bounds how long Lead may take to return once its
	// context has ended. After a stop (ErrRevoked) the lock is released
	// once Lead has returned; if the timeout passes first, the term's
	// authority ends (Commit refuses) and the lock is left to the
	// session's end. Default worker.DefaultDrainTimeout.
	DrainTimeout time.Duration

	// Registerer receives the election's metrics (labelled with the
	// election's Name and the instance's ID); nil keeps them unexported.
	// Logger defaults to zap.NewNop().
	Registerer prometheus.Registerer
	Logger     *zap.Logger
	// JitterSeed seeds the instance's jitter; 0 picks a random seed.
	JitterSeed uint64
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Policy == (shard.LeasePolicy{}) {
		c.Policy = shard.DefaultPolicy
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = worker.DefaultDrainTimeout
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// problems lists every problem with c (after defaults).
func (c Config) problems() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if c.Lead == nil {
		add("lead function is nil")
	}
	if strings.TrimSpace(c.ID) == "" {
		add("worker id %q is empty", c.ID)
	} else if strings.ContainsAny(c.ID, "/ \t\n") {
		add("worker id %q must not contain '/' or spaces", c.ID)
	}
	if c.Coordinator == nil {
		add("coordinator is nil")
	}
	lock := shard.RoleLock(c.Name)
	if _, isShard := lock.Shard(); isShard || lock.Validate() != nil || lock == shard.AssignorLock {
		add("election name %q must be one path segment of a-z, 0-9 and '-', not a name a worker fleet uses for its own keys (assignor, config, shards, …)", c.Name)
	}
	if err := c.Policy.Validate(); err != nil {
		add("%v", err)
	}
	if c.DrainTimeout < 0 {
		add("drain timeout %v must not be negative (zero means the default, %v)", c.DrainTimeout, worker.DefaultDrainTimeout)
	}
	return problems
}

// Leadership is what Lead gets for one term.
type Leadership struct {
	// Instance is this instance's ID.
	Instance string
	// Token is the term's fencing token, higher than every earlier term's.
	// Send it with every write the leader makes to a system that checks it.
	Token shard.Token
	// Start is the checkpoint earlier leaders committed, loaded after this
	// term's token was fenced: it holds every commit they got in.
	Start offsets.Checkpoint

	e    *Election
	auth *lease.Authority
}

// Commit records the leader's progress with the term's token. It fails
// with an error wrapping worker.ErrLost once the term's authority has
// ended, without reaching the store, and with one wrapping
// offsets.ErrStaleToken once a newer leader has fenced the checkpoint;
// either way the leader must stop acting.
func (l *Leadership) Commit(ctx context.Context, offset int64) error {
	if l.auth == nil {
		return fmt.Errorf("%w: a Leadership that no Election issued has no term to commit for", worker.ErrLost)
	}
	_, err := l.auth.Commit(ctx, l.e.cfg.Offsets, l.e.checkpoint, l.Token, offset)
	return err
}

// Election is one instance's participation in an election. Create it with
// New and run it with Run.
type Election struct {
	cfg        Config // with its defaults
	lock       shard.Lock
	checkpoint shard.ID // the checkpoint's ID in cfg.Offsets
	log        *zap.Logger
	jitter     *backoff.Jitter
	leasing    lease.Config
	m          *metrics
	roles      *tracker
	closer     func() error // closes the default offsets store
	ran        atomic.Bool
}

// New validates cfg (every problem at once) and returns an Election. It
// does not contact the coordinator; Run does.
func New(cfg Config) (*Election, error) {
	cfg = cfg.withDefaults()
	if problems := cfg.problems(); len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	m, err := newMetrics(cfg.Name, cfg.ID, cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("%w: registering the metrics of election %q instance %q: %w", ErrInvalidConfig, cfg.Name, cfg.ID, err)
	}
	e := &Election{cfg: cfg, lock: shard.RoleLock(cfg.Name), checkpoint: shard.ID(cfg.Name + "-000"), m: m,
		log:    cfg.Logger.With(zap.String("election", cfg.Name), zap.String("instance", cfg.ID)),
		jitter: backoff.NewJitter(cfg.JitterSeed), roles: newTracker(cfg.ID, cfg.OnChange)}
	if cfg.Offsets == nil {
		store := offmem.New()
		e.cfg.Offsets, e.closer = store, store.Close
	}
	e.leasing = lease.Config{Sessions: cfg.Coordinator.Sessions(), Policy: cfg.Policy, Owner: cfg.ID, Lost: worker.ErrLost,
		Jitter: e.jitter, Logger: e.log, Renewed: m.renewed}
	return e, nil
}

// ID returns the instance's ID.
func (e *Election) ID() string { return e.cfg.ID }

// Lock returns the election's lock, shard.RoleLock(Config.Name).
func (e *Election) Lock() shard.Lock { return e.lock }

// Status returns the instance's current role, as OnChange last reported it.
func (e *Election) Status() Change { return e.roles.current() }

// Run takes part in the election until ctx ends, then steps down if it
// leads (Lead's context ends with worker.ErrRevoked; the lock is released
// once Lead returned, see Config.DrainTimeout), destroys its session and
// reports RoleStopped. After a lost session it takes part again with a new
// one. It returns nil after a graceful stop, or an error that retrying
// cannot cure (credentials the coordinator refuses). An Election runs
// once.
func (e *Election) Run(ctx context.Context) error {
	if !e.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: election %q instance %q runs once", worker.ErrAlreadyRunning, e.cfg.Name, e.cfg.ID)
	}
	e.roles.begin()
	err := e.participate(ctx)
	if e.closer != nil {
		_ = e.closer()
	}
	e.roles.stop()
	return err
}

// participate runs one session after another until ctx ends or a session
// fails in a way that retrying cannot cure.
func (e *Election) participate(ctx context.Context) error {
	retry := backoff.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second, J: e.jitter}
	for {
		err := e.session(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case isFatal(err):
			return err
		}
		wait := retry.Next()
		e.log.Warn("taking part again with a new session", zap.Error(err), zap.Duration("in", wait))
		if !backoff.Sleep(ctx.Done(), wait) {
			return nil
		}
	}
}

// session is one session's life: open it, campaign with it until ctx or
// its lease ends, destroy it. At a stop it first releases the lock, unless
// a Lead that overran its drain timeout still runs. It returns nil after a
// graceful stop and why the session ended otherwise.
func (e *Election) session(ctx context.Context) error {
	l, err := lease.Open(ctx, e.leasing)
	if err != nil {
		return err
	}
	defer l.Wait()
	running, err := e.campaign(ctx, l)
	if ctx.Err() != nil && !running {
		e.release(ctx, l, shard.ReasonShutdown) // at once, for another candidate to take it without a lock-delay
	}
	l.Destroy(ctx)
	switch {
	case ctx.Err() != nil:
		l.End(fmt.Errorf("%w: %s", worker.ErrRevoked, shard.ReasonShutdown))
		return nil
	case err != nil:
		l.End(err)
		return err
	}
	return context.Cause(l.Context())
}

// isFatal tells the errors that retrying cannot cure: credentials the
// coordinator refuses, a request it cannot take.
func isFatal(err error) bool {
	return errors.Is(err, shard.ErrPermissionDenied) || errors.Is(err, shard.ErrInvalidArgument)
}
