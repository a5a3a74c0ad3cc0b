package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/shard"
)

// Config says how an owner keeps its sessions.
type Config struct {
	// Sessions is the coordinator's.
	Sessions shard.Sessions
	// Policy is the lease policy, valid, with its defaults applied.
	Policy shard.LeasePolicy
	// Owner names the session's holder (shard.SessionSpec.Worker).
	Owner string
	// Lost is the sentinel every cause of a loss wraps (worker.ErrLost).
	Lost error
	// Jitter spreads the retries of failed renewals.
	Jitter *backoff.Jitter
	// Logger receives the renewal loop's warnings.
	Logger *zap.Logger
	// Renewed, if set, is told how long each renewal of the renewal loop
	// took and how it ended: the owner's metrics.
	Renewed func(took time.Duration, err error)
}

// Lease is one session's term of authority. Its context is cancelled with a
// cause wrapping Config.Lost at the local step-down deadline or when the
// coordinator says the session is gone. The deadline is enforced by a
// timer, not by the renewal loop, so a renewal stuck on a slow coordinator
// cannot delay the step-down.
type Lease struct {
	cfg     Config
	ctx     context.Context
	cancel  context.CancelCauseFunc
	session shard.SessionID
	renewal sync.WaitGroup

	mu     sync.Mutex
	timer  *time.Timer
	expiry time.Time // local step-down deadline
}

// Open creates a session and starts its term, with a goroutine that renews
// it until the term ends (Wait waits for it). The term does not end with
// ctx: the owner ends it (End) when it stops.
func Open(ctx context.Context, cfg Config) (*Lease, error) {
	p := cfg.Policy
	created := time.Now()
	sid, err := cfg.Sessions.Create(ctx, p.SessionSpec(cfg.Owner))
	if err != nil {
		return nil, fmt.Errorf("creating session: %w", err)
	}
	if time.Since(created) > p.RenewEvery {
		// A slow create leaves no way to tell when the session's TTL began
		// (possibly at the start): renew once and count from that renewal.
		if created, err = renewNow(ctx, cfg, sid); err != nil {
			destroy(ctx, cfg, sid)
			return nil, fmt.Errorf("renewing a session that was slow to create: %w", err)
		}
	}
	l := newLease(context.WithoutCancel(ctx), cfg, sid, created)
	l.renewal.Go(l.keep)
	return l, nil
}

// newLease starts the term of session, created at created (the start of the
// Sessions.Create call, which counts as its first renewal).
func newLease(parent context.Context, cfg Config, session shard.SessionID, created time.Time) *Lease {
	ctx, cancel := context.WithCancelCause(parent)
	l := &Lease{cfg: cfg, ctx: ctx, cancel: cancel, session: session, expiry: created.Add(cfg.Policy.StepDownAfter())}
	l.timer = time.AfterFunc(time.Until(l.expiry), func() { l.cancel(l.deadlineCause()) })
	return l
}

// Context is the term's: cancelled, with the cause, when the term ends.
func (l *Lease) Context() context.Context { return l.ctx }

// Session is the term's session.
func (l *Lease) Session() shard.SessionID { return l.session }

func (l *Lease) deadlineCause() error {
	return fmt.Errorf("%w: no renewal of session %s succeeded within %v (local deadline)", l.cfg.Lost, l.session, l.cfg.Policy.StepDownAfter())
}

// endIfPast ends the term if now is at or past its deadline: the timer does
// the same, but a process paused across the deadline may run other
// goroutines before the timer's.
func (l *Lease) endIfPast(now time.Time) {
	l.mu.Lock()
	past := !now.Before(l.expiry)
	l.mu.Unlock()
	if past {
		l.End(l.deadlineCause())
	}
}

// extend moves the deadline after a renewal that started at start.
func (l *Lease) extend(start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return // already stepped down; a late success does not bring authority back
	}
	expiry := start.Add(l.cfg.Policy.StepDownAfter())
	if !expiry.After(l.expiry) {
		return
	}
	if l.timer.Stop() { // false: the timer fired concurrently and the term is over
		l.expiry = expiry
		l.timer.Reset(time.Until(expiry))
	}
}

func (l *Lease) deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expiry
}

// End stops the term with cause (a no-op if it already ended).
func (l *Lease) End(cause error) {
	l.mu.Lock()
	l.timer.Stop()
	l.mu.Unlock()
	l.cancel(cause)
}

// Wait waits for the renewal loop, which returns once the term has ended.
func (l *Lease) Wait() { l.renewal.Wait() }

// Renew renews the session once, bounded by the local deadline, and moves
// the deadline when it succeeds. It does not end the term on a failure:
// the caller says what a gone session means.
func (l *Lease) Renew() error {
	start := time.Now()
	ctx, cancel := context.WithDeadline(l.ctx, l.deadline())
	defer cancel()
	err := l.cfg.Sessions.Renew(ctx, l.session)
	if err == nil {
		l.extend(start)
	}
	return err
}

// keep renews the session until the term ends. Failures are retried with
// jittered backoff until the local deadline; shard.ErrSessionInvalid ends
// the term at once.
func (l *Lease) keep() {
	p := l.cfg.Policy
	retry := backoff.Backoff{Base: p.RenewEvery / 8, Max: p.RenewEvery / 2, J: l.cfg.Jitter}
	wait := p.RenewEvery
	for backoff.Sleep(l.ctx.Done(), wait) {
		start := time.Now()
		err := l.Renew()
		if l.cfg.Renewed != nil {
			l.cfg.Renewed(time.Since(start), err)
		}
		switch {
		case err == nil:
			retry.Reset()
			wait = p.RenewEvery
		case errors.Is(err, shard.ErrSessionInvalid):
			l.End(fmt.Errorf("%w: %w", l.cfg.Lost, err))
			return
		default:
			wait = retry.Next()
			if l.ctx.Err() == nil {
				l.cfg.Logger.Warn("session renewal failed; retrying before the local deadline",
					zap.String("session", string(l.session)), zap.Error(err),
					zap.Duration("left", time.Until(l.deadline())), zap.Duration("retry_in", wait))
			}
		}
	}
}

// Destroy ends the session on a best-effort basis, even when ctx has
// ended, so the locks it still holds are free at once instead of after its
// TTL (those it did not release stay closed for the lock-delay).
func (l *Lease) Destroy(ctx context.Context) { destroy(ctx, l.cfg, l.session) }

func destroy(ctx context.Context, cfg Config, sid shard.SessionID) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Policy.RenewEvery)
	defer cancel()
	if err := cfg.Sessions.Destroy(dctx, sid); err != nil {
		cfg.Logger.Warn("destroying session failed; it will expire by its TTL", zap.String("session", string(sid)), zap.Error(err))
	}
}

// renewNow renews sid once and returns when that renewal started.
func renewNow(ctx context.Context, cfg Config, sid shard.SessionID) (time.Time, error) {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, cfg.Policy.StepDownAfter())
	defer cancel()
	err := cfg.Sessions.Renew(rctx, sid)
	if err == nil && time.Since(start) > cfg.Policy.RenewEvery {
		err = fmt.Errorf("renewal took %v, more than the renewal interval %v", time.Since(start), cfg.Policy.RenewEvery)
	}
	return start, err
}
