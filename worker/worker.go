package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/internal/lease"
	"github.com/shardlease/shardlease/shard"
)

// Worker owns shards of one fleet on behalf of one Handler.
type Worker struct {
	cfg    Config
	log    *zap.Logger
	m      *metrics
	jitter *backoff.Jitter

	running atomic.Bool
	status  atomic.Pointer[Status]
	// draining is an operator's drain request (Member.Draining) as last
	// seen on this worker's own member key. join writes it back, so a
	// rejoin after a loss does not silently undo the operator's request.
	draining atomic.Bool
	// cordon is an operator's cordon (Member.Cordon) as last seen on this
	// worker's own member key, written back as draining is.
	cordon atomic.Pointer[shard.Mark]
	// assignor is this worker's part in the fleet's assignor role.
	assignor *assignor.Assignor
	// load is the worker's part in load balancing (load_state.go).
	load loadState
	// leasing is how the worker keeps each term's session.
	leasing lease.Config
	// ready is closed when the worker first joined the fleet (Ready);
	// waiting is why it has not yet, or not again (Status.Waiting).
	ready     chan struct{}
	readyOnce sync.Once
	waiting   atomic.Pointer[string]
	// turns orders each shard's standby and handler runs (turns).
	turns turns
	// standbyWake tells the loop a standby's report changed (buffer 1).
	standbyWake chan struct{}
	// stopNow is closed by StopNow.
	stopNow     chan struct{}
	stopNowOnce sync.Once
	// fleet is the fleet's stored config as last read (fleetConfig);
	// closed the shards this worker closed for a reshard.
	fleet  atomic.Pointer[shard.Config]
	closed closedShards
}

// StopNow cuts short a stop's drain (Config.DrainBeforeStop): the worker
// releases what it still runs at once, as a stop without the drain does,
// and Run returns. Before the stop it only arms that: a stop that follows
// does not drain. It is what a second SIGTERM means to `shardd`. Safe to
// call more than once and from any goroutine.
func (w *Worker) StopNow() { w.stopNowOnce.Do(func() { close(w.stopNow) }) }

// Ready is closed once the worker has first joined the fleet: its session
// is open and its member key written, so the assignor plans with it. It
// stays closed after a loss; Status says what the worker does now, and
// Status.Waiting why it is not in the fleet while it is not.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// wait records why the worker is not in the fleet ("" once it is).
func (w *Worker) wait(why string) {
	w.waiting.Store(&why)
	if st := w.status.Load(); st != nil && st.Waiting != why {
		next := *st
		next.Waiting = why
		w.status.Store(&next)
	}
}

// New validates cfg (every problem at once) and returns a Worker. It does not
// contact the coordinator; Run does.
func New(cfg Config) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.ID, cfg.Version, cfg.Zone, stepsOf(cfg.Handler), cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("worker %q: registering metrics: %w", cfg.ID, err)
	}
	w := &Worker{
		ready:       make(chan struct{}),
		standbyWake: make(chan struct{}, 1),
		stopNow:     make(chan struct{}),
		cfg:         cfg,
		log:         cfg.Logger.With(zap.String("worker", cfg.ID)),
		m:           m,
		jitter:      backoff.NewJitter(cfg.JitterSeed),
	}
	w.leasing = lease.Config{Sessions: cfg.Coordinator.Sessions(), Policy: cfg.Policy, Owner: cfg.ID, Lost: ErrLost,
		Jitter: w.jitter, Logger: w.log, Renewed: func(took time.Duration, err error) {
			w.m.renewSeconds.Observe(took.Seconds())
			if err != nil {
				w.m.renewFailures.Inc()
			}
		}}
	w.assignor, err = assignor.New(assignor.Config{
		Worker:      cfg.ID,
		Fleet:       cfg.Fleet,
		Coordinator: cfg.Coordinator,
		Lease:       cfg.Policy,
		Policy:      cfg.balancePolicy(),
		ShardWeight: cfg.ShardWeight,
		Coalesce:    cfg.WatchCoalesce,
		Jitter:      func(d time.Duration) time.Duration { return w.jitter.Between(0, d) },
		Registerer:  cfg.Registerer,
		Logger:      w.log,
	})
	if errors.Is(err, assignor.ErrMetrics) {
		return nil, fmt.Errorf("worker %q: %w", cfg.ID, errors.Join(ErrInvalidConfig, err))
	}
	if err != nil {
		return nil, fmt.Errorf("worker %q: %w", cfg.ID, err)
	}
	return w, nil
}

// ID returns the worker's ID.
func (w *Worker) ID() string { return w.cfg.ID }

// Run joins the fleet and owns shards until ctx ends, then drains: every
// handler is revoked, the worker waits for them (up to DrainTimeout), releases
// every shard in one batch and destroys its session, so other workers can
// take over at once. After a loss it rejoins with a new session. It returns
// nil after a graceful stop, or an error that prevents running at all: an
// invalid or mismatched fleet config, a worker ID held by another live
// session for longer than a crashed predecessor's session could live, or a
// coordinator that refuses the worker's credentials (an error wrapping
// shard.ErrPermissionDenied, at start or on any later session or join).
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: worker %q", ErrAlreadyRunning, w.cfg.ID)
	}
	defer w.running.Store(false)
	defer w.publish(StateStopped, "", nil, nil)
	w.wait("") // a reason left by an earlier Run is not this one's
	w.publish(StateJoining, "", nil, nil)
	var startBy time.Time
	if w.cfg.StartTimeout > 0 {
		startBy = time.Now().Add(w.cfg.StartTimeout)
	}

	pauseCtx, stopPauses := context.WithCancel(ctx)
	var stop sync.WaitGroup
	defer stop.Wait()
	defer stopPauses()
	stop.Go(func() { w.measurePauses(pauseCtx) })

	if err := w.configure(ctx, startBy); err != nil {
		return err
	}
	retry := backoff.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second, J: w.jitter}
	for first := true; ; first = false {
		if !first {
			w.restoreConfig(ctx)
		}
		err := w.term(ctx, startBy)
		if ctx.Err() != nil {
			return nil
		}
		if isFatal(err) || errors.Is(err, ErrNotJoined) {
			return err
		}
		if err := w.startExpired(startBy, err); err != nil {
			return err
		}
		wait := retry.Next()
		w.log.Warn("rejoining the fleet", zap.Error(err), zap.Duration("in", wait))
		if !backoff.Sleep(ctx.Done(), wait) {
			return nil
		}
	}
}

// isFatal tells errors that retrying cannot cure: a wrong config or
// argument, a duplicate worker ID, credentials the coordinator refuses.
func isFatal(err error) bool {
	return errors.Is(err, shard.ErrConfigMismatch) || errors.Is(err, shard.ErrInvalidConfig) ||
		errors.Is(err, shard.ErrInvalidArgument) || errors.Is(err, shard.ErrMemberExists) ||
		errors.Is(err, shard.ErrPermissionDenied)
}

// configure checks the fleet's stored config against ours, storing ours if
// the fleet has none, then proposes this worker's balancing policy
// (proposePolicy). Transient failures are retried with backoff.
func (w *Worker) configure(ctx context.Context, startBy time.Time) error {
	retry := backoff.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second, J: w.jitter}
	for {
		stored, err := w.cfg.Coordinator.Fleet().Configure(ctx, w.cfg.Fleet)
		if err == nil {
			w.fleet.Store(&stored)
			err = w.proposePolicy(ctx)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, shard.ErrConfigMismatch):
			return fmt.Errorf("worker %q refuses to start: it has %d shards named %q, the fleet has %d named %q: %w",
				w.cfg.ID, w.cfg.Fleet.Shards, w.cfg.Fleet.Name, stored.Shards, stored.Name, err)
		case isFatal(err) || ctx.Err() != nil:
			return err
		}
		w.wait(fmt.Sprintf("the coordinator is not reachable: %v", err))
		if err := w.startExpired(startBy, err); err != nil {
			return err
		}
		wait := retry.Next()
		w.log.Warn("coordinator not reachable; retrying", zap.Error(err), zap.Duration("in", wait))
		if !backoff.Sleep(ctx.Done(), wait) {
			return ctx.Err()
		}
	}
}

// restoreConfig writes the fleet's config again before a new term if the
// coordinator has none (Configure writes only then): a coordinator rebuilt
// empty under a running fleet lost it, and its operators' tools
// (`shardctl status`, `recover`) need it. A config that now differs is
// only logged: the fleet keeps running the one it started with (see
// shard/consul), and a restarted worker is the one to refuse it.
func (w *Worker) restoreConfig(ctx context.Context) {
	// The config as last read, reshards and all: written from the
	// worker's own config alone, a lost P/config would lose the fleet's
	// layouts, and workers that start on it would run retired shards.
	cfg := w.cfg.Fleet
	if stored := w.fleet.Load(); stored != nil {
		cfg = *stored
	}
	if _, err := w.cfg.Coordinator.Fleet().Configure(ctx, cfg); err != nil && ctx.Err() == nil {
		w.log.Warn("checking the fleet's config before rejoining failed", zap.Error(err))
	}
}

// startExpired returns an error wrapping ErrNotJoined once startBy (set
// by Config.StartTimeout) has passed and the worker never joined; last is
// the latest reason it could not.
func (w *Worker) startExpired(startBy time.Time, last error) error {
	select {
	case <-w.ready:
		return nil
	default:
	}
	if startBy.IsZero() || time.Now().Before(startBy) {
		return nil
	}
	return fmt.Errorf("%w within its start timeout of %v: %w", ErrNotJoined, w.cfg.StartTimeout, last)
}

// proposePolicy stores this worker's balancing policy as the fleet's if
// the fleet stores none (a new fleet), and says so when the fleet's
// differs: the fleet's is the one followed, changed with shardctl balance.
// A stored policy that cannot be read is reported and left to the
// operator; the assignor then follows its workers' own. A worker left at
// the defaults proposes nothing: a fleet with no stored policy follows the
// defaults already, and a write would only add to every token.
func (w *Worker) proposePolicy(ctx context.Context) error {
	own := w.cfg.balancePolicy()
	if own.Equal(Config{}.withDefaults().balancePolicy()) {
		return nil
	}
	stored, err := w.cfg.Coordinator.Fleet().SetPolicy(ctx, own, true)
	switch {
	case errors.Is(err, shard.ErrInvalidArgument):
		w.log.Warn("the fleet's stored balance policy cannot be read; the assignor follows its worker's own until an operator sets one", zap.Error(err))
		return nil
	case err != nil:
		return err
	case !stored.Equal(own):
		w.log.Info("the fleet's balance policy differs from this worker's configuration; following the fleet's (shardctl balance changes it)",
			zap.Stringer("fleet", stored), zap.Stringer("configured", own))
	}
	return nil
}

// term is one session's lifetime: create the session, join, run the loop.
// It returns nil after a graceful stop and the cause after a loss.
func (w *Worker) term(ctx context.Context, startBy time.Time) error {
	l, err := lease.Open(ctx, w.leasing)
	if err != nil {
		w.wait(fmt.Sprintf("no session: %v", err))
		return err
	}
	defer l.Wait()

	m, err := w.join(ctx, l, startBy)
	if err != nil {
		l.End(err)
		l.Destroy(ctx)
		return err
	}
	w.wait("")
	w.readyOnce.Do(func() { close(w.ready) })
	w.log.Info("joined the fleet", zap.String("session", string(l.Session())))
	lp := newLoop(w, l)
	lp.member = m
	guarding, stopGuarding := context.WithCancel(l.Context())
	var guard sync.WaitGroup
	guard.Go(func() { w.guardMember(guarding, l, m) })
	lp.stopGuard = func() { stopGuarding(); guard.Wait() }
	defer lp.stopGuard()
	candidate, stopCandidate := context.WithCancel(l.Context())
	var campaigning sync.WaitGroup
	campaigning.Go(func() { w.assignor.Run(candidate, l.Session()) })
	lp.stopCandidate = func() { stopCandidate(); campaigning.Wait() }
	defer lp.stopCandidate()
	return lp.run(ctx)
}

// join registers the member key. A key held by another session is retried
// for as long as a crashed predecessor with the same ID could keep its
// session (2·TTL on Consul, plus a renewal period); after that it is a
// duplicate worker ID.
func (w *Worker) join(ctx context.Context, l *lease.Lease, startBy time.Time) (shard.Member, error) {
	m := shard.Member{ID: w.cfg.ID, Address: w.cfg.Address, Version: w.cfg.Version, Protocol: shard.Protocol, Steps: w.steps(), Weight: w.cfg.Weight, Started: time.Now(),
		Zone: w.cfg.Zone, Labels: maps.Clone(w.cfg.Labels), Draining: w.draining.Load(), Cordon: w.keptCordon(l)}
	_, m.StandbyCapable = w.cfg.Handler.(Standby)
	giveUp := time.Now().Add(2*w.cfg.Policy.TTL + w.cfg.Policy.RenewEvery)
	reported := false
	retry := backoff.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, J: w.jitter}
	for {
		err := w.cfg.Coordinator.Members().Join(l.Context(), l.Session(), m)
		if err == nil {
			return m, nil
		}
		if errors.Is(err, shard.ErrMemberExists) && time.Now().After(giveUp) {
			return m, fmt.Errorf("worker id %q is held by another live session: is another worker running with this id? %w", w.cfg.ID, err)
		}
		if errors.Is(err, shard.ErrMemberExists) && !reported {
			// Said at once, though it may be this worker's own previous
			// process whose session has not expired yet: an operator who
			// started two workers with one ID learns it now, not in 2·TTL.
			reported = true
			why := w.describeHolder(l.Context())
			w.log.Error("another session holds this worker's id: another worker with this id is running, or this one's previous process crashed less than 2·TTL ago; "+
				"waiting for that session to end", zap.String("holder", why), zap.Time("give_up_at", giveUp))
			w.wait(fmt.Sprintf("worker id %q is held by another session (%s): a second worker with this id, or this one's previous process until its session expires (by %s)",
				w.cfg.ID, why, giveUp.Format(time.RFC3339)))
		}
		if err := w.startExpired(startBy, err); err != nil {
			return m, err
		}
		if isFatal(err) && !errors.Is(err, shard.ErrMemberExists) {
			return m, err
		}
		if l.Context().Err() != nil {
			return m, context.Cause(l.Context())
		}
		wait := retry.Next()
		w.log.Warn("joining failed; retrying", zap.Error(err), zap.Duration("in", wait))
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-l.Context().Done():
			return m, context.Cause(l.Context())
		case <-time.After(wait):
		}
	}
}

// describeHolder says who holds this worker's member key, from the fleet's
// snapshot: its session, address, version and start, as far as known.
func (w *Worker) describeHolder(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	snap, err := w.cfg.Coordinator.Fleet().Watch(ctx, 0)
	if err != nil {
		return "unknown: " + err.Error()
	}
	m, ok := snap.Member(w.cfg.ID)
	if !ok {
		return "unknown: no member key listed"
	}
	return fmt.Sprintf("session %s, address %q, version %q, started %s", m.Session, m.Address, m.Version, m.Started.Format(time.RFC3339))
}
