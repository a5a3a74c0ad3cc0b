package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

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
	// ID names this instance. Required, unique among live instances.
	ID string
	// Name names the election; its one lock is the shard Name + "-000".
	// Every instance of one election must use the same Name (the fleet
	// config refuses a mismatch). Default DefaultName. With shard/consul
	// the coordinator's prefix separates elections too.
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

	// Policy and DrainTimeout are passed to the worker (see worker.Config
	// for their defaults).
	Policy       shard.LeasePolicy
	DrainTimeout time.Duration

	// Registerer receives the worker's metrics (labelled worker=ID); nil
	// keeps them unexported. Logger defaults to zap.NewNop().
	Registerer prometheus.Registerer
	Logger     *zap.Logger
	// JitterSeed seeds the worker's jitter; 0 picks a random seed.
	JitterSeed uint64
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

	claim *worker.Claim
}

// Commit records the leader's progress with the term's token. It fails with
// an error wrapping offsets.ErrStaleToken once a newer leader has fenced the
// checkpoint; the leader must then stop acting.
func (l *Leadership) Commit(ctx context.Context, offset int64) error {
	return l.claim.Commit(ctx, offset)
}

// Election is one instance's participation in an election. Create it with
// New and run it with Run.
type Election struct {
	cfg    Config
	w      *worker.Worker
	lock   shard.ID
	roles  *tracker
	closer func() error // closes the default offsets store
	ran    atomic.Bool
	// runCtx is Run's context, set before the worker starts: a term that
	// ends because Run is ending reports stepping_down until stopped, not
	// a candidacy.
	runCtx context.Context
}

// New validates cfg (every problem at once) and returns an Election. It
// does not contact the coordinator; Run does.
func New(cfg Config) (*Election, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	var problems []string
	if cfg.Lead == nil {
		problems = append(problems, "lead function is nil")
	}
	var closer func() error
	if cfg.Offsets == nil {
		store := offmem.New()
		cfg.Offsets, closer = store, store.Close
	}
	fleet := shard.Config{Shards: 1, Name: cfg.Name}
	e := &Election{cfg: cfg, lock: fleet.IDs()[0], closer: closer}
	e.roles = newTracker(cfg.ID, e.lock, cfg.OnChange)
	wcfg := worker.Config{
		ID:           cfg.ID,
		Fleet:        fleet,
		Coordinator:  cfg.Coordinator,
		Offsets:      cfg.Offsets,
		Handler:      worker.HandlerFunc(e.process),
		Policy:       cfg.Policy,
		DrainTimeout: cfg.DrainTimeout,
		Registerer:   cfg.Registerer,
		Logger:       cfg.Logger,
		JitterSeed:   cfg.JitterSeed,
		// One shard: there is nothing to balance, so the first leader is
		// not made to wait for other candidates to register.
		ColdStartGather: worker.NoColdStartGather,
	}
	if err := wcfg.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		if closer != nil {
			_ = closer()
		}
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	w, err := worker.New(wcfg)
	if err != nil {
		if closer != nil {
			_ = closer()
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	e.w = w
	return e, nil
}

// ID returns the instance's ID.
func (e *Election) ID() string { return e.cfg.ID }

// Lock returns the shard that is the election's lock.
func (e *Election) Lock() shard.ID { return e.lock }

// Status returns the instance's current role, as OnChange last reported it.
func (e *Election) Status() Change { return e.roles.current() }

// Run takes part in the election until ctx ends, then steps down if it
// leads (Lead's context ends with worker.ErrRevoked; the lock is released
// once Lead returned or the drain timeout passed), and reports RoleStopped.
// It returns what worker.Run returns. An Election runs once.
func (e *Election) Run(ctx context.Context) error {
	if !e.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: election %q instance %q runs once", worker.ErrAlreadyRunning, e.cfg.Name, e.cfg.ID)
	}
	e.runCtx = ctx
	e.roles.begin()
	followCtx, stopFollowing := context.WithCancel(ctx)
	var following sync.WaitGroup
	following.Go(func() { e.follow(followCtx) })
	err := e.w.Run(ctx)
	stopFollowing()
	following.Wait()
	if e.closer != nil {
		_ = e.closer()
	}
	e.roles.stop()
	return err
}

// process is the worker's handler for the one shard: a term of leadership.
func (e *Election) process(ctx context.Context, c *worker.Claim) error {
	e.roles.started(c.Token)
	// The end of the term is reported as soon as ctx ends, while Lead may
	// still run; the once also covers a Lead that saw ctx end before the
	// AfterFunc was triggered, and makes the return wait for the report.
	var once sync.Once
	ending := func() { once.Do(func() { e.roles.ending(context.Cause(ctx)) }) }
	stop := context.AfterFunc(ctx, ending)
	err := e.cfg.Lead(ctx, &Leadership{Instance: e.cfg.ID, Token: c.Token, Start: c.Start, claim: c})
	stop()
	if ctx.Err() != nil {
		ending()
	}
	e.roles.returned(ctx.Err() != nil, e.runCtx.Err() != nil)
	return err
}

// follow hands the role tracker every snapshot of the election's fleet
// until ctx ends, so followers know who leads. A worker reads only its own
// assignment; the one-shard fleet's listing is small, so each instance
// follows it with a blocking query of its own.
func (e *Election) follow(ctx context.Context) {
	_ = shard.Follow(ctx, e.cfg.Coordinator.Fleet().Watch, shard.FollowOptions{}, func(s shard.Snapshot) (time.Time, error) {
		e.roles.snapshot(s)
		return time.Time{}, nil
	})
}
