package election

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/internal/lease"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// campaign follows the election's lock with session l until ctx or the
// lease ends (lease.Campaign): it reports every holder it sees, takes the
// lock whenever it can and leads while it holds it. It reports whether a
// Lead it gave up waiting for may still run, and returns an error only
// when retrying cannot cure it.
func (e *Election) campaign(ctx context.Context, l *lease.Lease) (running bool, err error) {
	fctx, stop := context.WithCancel(l.Context())
	defer stop()
	defer context.AfterFunc(ctx, stop)()
	c := lease.Candidacy{Locks: e.cfg.Coordinator.Locks(), Session: l.Session(), Lock: e.lock, Policy: e.cfg.Policy,
		Jitter: e.spread, Seen: e.roles.saw, OnError: func(err error) bool {
			e.log.Warn("campaigning failed", zap.Error(err), zap.Bool("retrying", !isFatal(err)))
			return !isFatal(err)
		}}
	err = lease.Campaign(fctx, c, func(token shard.Token) { running = e.lead(ctx, l, token) })
	if errors.Is(err, shard.ErrSessionInvalid) {
		l.End(fmt.Errorf("%w: %w", worker.ErrLost, err))
		err = nil
	}
	return running, err
}

// watch reads the election's lock with a blocking query.
func (e *Election) watch(ctx context.Context, after uint64) (shard.LockKey, error) {
	return e.cfg.Coordinator.Locks().Watch(ctx, e.lock, after)
}

// spread returns a random duration in [0, d) from the instance's jitter,
// so a seeded instance replays its waits.
func (e *Election) spread(d time.Duration) time.Duration { return e.jitter.Between(0, d) }

// lead is one term: session l holds the lock at token. It runs Lead (serve)
// until the term ends and returns once Lead has returned, or reports that
// it gave up waiting and Lead still runs:
//
//   - ctx ends (Run's): Lead's context ends with worker.ErrRevoked. A Lead
//     that overruns the drain timeout loses the term's authority (Commit
//     refuses) and gets one renewal interval more. The caller releases
//     the lock once Lead has returned (session), and otherwise leaves it
//     to the session's destroy and its lock-delay.
//   - the term's authority ends (the lease's local deadline, the session's
//     end, the lock seen held by another session or by none): Lead's
//     context ends with worker.ErrLost, and it gets the drain timeout to
//     return before the instance campaigns again.
//   - the offset store refuses to fence token (a newer term fenced it):
//     the lock is released, to be taken again with a newer token.
func (e *Election) lead(ctx context.Context, l *lease.Lease, token shard.Token) (running bool) {
	log := e.log.With(zap.Uint64("token", uint64(token)), zap.String("session", string(l.Session())))
	log.Info("took the election's lock")
	e.m.leader.Set(1)
	defer e.m.leader.Set(0)
	auth := lease.NewAuthority(l)
	defer auth.End(nil)
	work, revoke := context.WithCancelCause(auth.Context())
	defer revoke(nil)
	guarding, stopGuarding := context.WithCancel(auth.Context())
	var guard sync.WaitGroup
	guard.Go(func() { e.guard(guarding, l, token, auth) })
	defer func() { stopGuarding(); guard.Wait() }()

	var fenceErr error
	served := make(chan struct{})
	go func() { defer close(served); fenceErr = e.serve(ctx, work, auth, token) }()
	select {
	case <-served:
		if fenceErr != nil {
			log.Error("the offset store refused this term's token: a newer term fenced the checkpoint; releasing the lock", zap.Error(fenceErr))
			stopGuarding() // the release is this term's own write, not a loss
			e.release(ctx, l, shard.ReasonLost)
			return false
		}
	case <-ctx.Done():
		revoke(fmt.Errorf("%w: %s", worker.ErrRevoked, shard.ReasonShutdown))
		if returns(served, e.cfg.DrainTimeout) {
			return false
		}
		auth.Lose(fmt.Sprintf("Lead did not return within the drain timeout %v", e.cfg.DrainTimeout))
		if returns(served, e.cfg.Policy.RenewEvery) {
			return false
		}
		log.Error("Lead still runs after the drain timeout and its loss: the lock is left to the session's end and its lock-delay",
			zap.Duration("drain_timeout", e.cfg.DrainTimeout), zap.Duration("lock_delay", e.cfg.Policy.EffectiveLockDelay()))
		return true
	case <-auth.Context().Done():
		if !returns(served, e.cfg.DrainTimeout) {
			log.Warn("Lead still runs after the term was lost and the drain timeout passed", zap.Duration("drain_timeout", e.cfg.DrainTimeout))
			running = true
		}
	}
	log.Warn("stepped down: the term was lost", zap.Error(context.Cause(auth.Context())))
	return running
}

// release gives the lock back at once, without lock-delay, so another
// candidate takes it without waiting for the session's end.
func (e *Election) release(ctx context.Context, l *lease.Lease, why shard.Reason) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.Policy.RenewEvery)
	defer cancel()
	if err := e.cfg.Coordinator.Locks().Release(rctx, l.Session(), []shard.Lock{e.lock}, why); err != nil {
		e.log.Warn("releasing the election's lock failed; it is freed when the session ends", zap.Error(err))
	}
}

// returns reports whether done closes within d.
func returns(done <-chan struct{}, d time.Duration) bool { return !backoff.Sleep(done, d) }

// guard follows the lock for as long as ctx lasts (the term) and ends the
// term's authority once the lock is not the term's any more: released or
// deleted by someone else (an operator), or held by another session.
func (e *Election) guard(ctx context.Context, l *lease.Lease, token shard.Token, auth *lease.Authority) {
	_ = shard.Follow(ctx, e.watch, shard.FollowOptions{Jitter: e.spread}, func(k shard.LockKey) (time.Time, error) {
		e.roles.saw(k)
		if k.Session == l.Session() && k.Token == token {
			return time.Time{}, nil
		}
		holder := "no session"
		if k.Held() {
			holder = fmt.Sprintf("%s (session %s, token %d)", k.Worker, k.Session, k.Token)
		}
		auth.Lose(fmt.Sprintf("the lock %s is held by %s, not by this term's session %s at token %d", e.lock, holder, l.Session(), token))
		return time.Time{}, shard.ErrStopFollowing
	})
}

// serve fences the term's token, loads the checkpoint and runs Lead, again
// with backoff when it returns while the term lasts, each time from what is
// committed then. It returns an error only when the fence refused the
// token.
func (e *Election) serve(runCtx, ctx context.Context, auth *lease.Authority, token shard.Token) error {
	start, err := e.fence(ctx, token)
	if err != nil || ctx.Err() != nil {
		return err
	}
	retry := backoff.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second, J: e.jitter}
	for auth.Err() == nil {
		began := time.Now()
		err := e.process(runCtx, ctx, &Leadership{Instance: e.cfg.ID, Token: token, Start: start, e: e, auth: auth})
		if ctx.Err() != nil || auth.Err() != nil {
			return nil
		}
		if time.Since(began) > time.Minute {
			retry.Reset() // it ran fine for a while: start the backoff over
		}
		wait := retry.Next()
		e.log.Warn("Lead returned while this instance leads; running it again", zap.Error(err), zap.Duration("in", wait))
		if !backoff.Sleep(ctx.Done(), wait) {
			return nil
		}
		if cp, err := e.cfg.Offsets.Load(ctx, e.checkpoint); err == nil {
			start = cp
		}
	}
	return nil
}

// fence fences token on the checkpoint and loads it, retrying failures
// other than a refusal (offsets.ErrStaleToken) with backoff until ctx ends.
func (e *Election) fence(ctx context.Context, token shard.Token) (offsets.Checkpoint, error) {
	retry := backoff.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second, J: e.jitter}
	for {
		err := e.cfg.Offsets.Fence(ctx, e.checkpoint, token)
		if err == nil {
			var cp offsets.Checkpoint
			if cp, err = e.cfg.Offsets.Load(ctx, e.checkpoint); err == nil {
				return cp, nil
			}
		}
		if errors.Is(err, offsets.ErrStaleToken) {
			return offsets.Checkpoint{}, err
		}
		wait := retry.Next()
		if ctx.Err() == nil {
			e.log.Warn("fencing the checkpoint failed; retrying", zap.Error(err), zap.Duration("in", wait))
		}
		if !backoff.Sleep(ctx.Done(), wait) {
			return offsets.Checkpoint{}, nil
		}
	}
}

// process runs Lead once and reports the term's roles around it: leader as
// it starts, stepping_down as soon as ctx ends (while Lead may still run),
// and the end of stepping down once it has returned.
func (e *Election) process(runCtx, ctx context.Context, l *Leadership) error {
	e.roles.started(l.Token)
	// The once also covers a Lead that saw ctx end before the AfterFunc
	// was triggered, and makes the return wait for the report.
	var once sync.Once
	ending := func() { once.Do(func() { e.roles.ending(context.Cause(ctx)) }) }
	stop := context.AfterFunc(ctx, ending)
	err := e.call(ctx, l)
	stop()
	if ctx.Err() != nil {
		ending()
	}
	e.roles.returned(ctx.Err() != nil, runCtx.Err() != nil)
	return err
}

// call runs Lead, turning a panic into an error, so that a Lead that
// panics is run again like one that failed.
func (e *Election) call(ctx context.Context, l *Leadership) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("lead panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return e.cfg.Lead(ctx, l)
}
