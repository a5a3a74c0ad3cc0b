package worker

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

// lease is one session's term of authority. Its context is the parent of
// every shard context of the term and is cancelled with a cause wrapping
// ErrLost at the local step-down deadline or when the coordinator says the
// session is gone. The deadline is enforced by a timer, not by the renewal
// loop, so a renewal stuck on a slow coordinator cannot delay the step-down.
type lease struct {
	ctx     context.Context
	session shard.SessionID

	cancel        context.CancelCauseFunc
	stepDownAfter time.Duration
	mu            sync.Mutex
	timer         *time.Timer
	expiry        time.Time // local step-down deadline
}

// newLease starts the term of session, created at created (the start of the
// Sessions.Create call, which counts as its first renewal).
func newLease(parent context.Context, session shard.SessionID, created time.Time, p shard.LeasePolicy) *lease {
	ctx, cancel := context.WithCancelCause(parent)
	l := &lease{ctx: ctx, session: session, cancel: cancel, stepDownAfter: p.StepDownAfter()}
	l.expiry = created.Add(p.StepDownAfter())
	l.timer = time.AfterFunc(time.Until(l.expiry), func() { l.cancel(l.deadlineCause()) })
	return l
}

func (l *lease) deadlineCause() error {
	return fmt.Errorf("%w: no renewal of session %s succeeded within %v (local deadline)", ErrLost, l.session, l.stepDownAfter)
}

// endIfPast ends the term if now is at or past its deadline: the timer does
// the same, but a process paused across the deadline may run other
// goroutines before the timer's.
func (l *lease) endIfPast(now time.Time) {
	l.mu.Lock()
	past := !now.Before(l.expiry)
	l.mu.Unlock()
	if past {
		l.end(l.deadlineCause())
	}
}

// extend moves the deadline after a renewal that started at start.
func (l *lease) extend(start time.Time, p shard.LeasePolicy) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return // already stepped down; a late success does not bring authority back
	}
	expiry := start.Add(p.StepDownAfter())
	if !expiry.After(l.expiry) {
		return
	}
	if l.timer.Stop() { // false: the timer fired concurrently and the term is over
		l.expiry = expiry
		l.timer.Reset(time.Until(expiry))
	}
}

func (l *lease) deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expiry
}

// end stops the term with cause (a no-op if it already ended).
func (l *lease) end(cause error) {
	l.mu.Lock()
	l.timer.Stop()
	l.mu.Unlock()
	l.cancel(cause)
}

// renew keeps the session alive until the lease ends. It runs on its own
// goroutine. Failures are retried with jittered backoff until the local
// deadline; ErrSessionInvalid ends the term at once.
func (w *Worker) renew(l *lease) {
	p := w.cfg.Policy
	retry := backoff.Backoff{Base: p.RenewEvery / 8, Max: p.RenewEvery / 2, J: w.jitter}
	wait := p.RenewEvery
	for backoff.Sleep(l.ctx.Done(), wait) {
		start := time.Now()
		ctx, cancel := context.WithDeadline(l.ctx, l.deadline())
		err := w.cfg.Coordinator.Sessions().Renew(ctx, l.session)
		cancel()
		w.m.renewSeconds.Observe(time.Since(start).Seconds())
		switch {
		case err == nil:
			l.extend(start, p)
			retry.Reset()
			wait = p.RenewEvery
		case errors.Is(err, shard.ErrSessionInvalid):
			w.m.renewFailures.Inc()
			l.end(fmt.Errorf("%w: %w", ErrLost, err))
			return
		default:
			w.m.renewFailures.Inc()
			wait = retry.Next()
			if l.ctx.Err() == nil {
				w.log.Warn("session renewal failed; retrying before the local deadline",
					zap.String("session", string(l.session)), zap.Error(err),
					zap.Duration("left", time.Until(l.deadline())), zap.Duration("retry_in", wait))
			}
		}
	}
}
