package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/internal/lease"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Handler processes one owned shard. See the package doc for the contract.
type Handler interface {
	Process(ctx context.Context, c *Claim) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, c *Claim) error

// Process calls f.
func (f HandlerFunc) Process(ctx context.Context, c *Claim) error { return f(ctx, c) }

// Claim is what a handler gets for one owned shard.
type Claim struct {
	shard.Claim
	// Worker is the ID of the worker running the handler.
	Worker string
	// Start is the shard's checkpoint as loaded after this claim's token
	// was fenced: every offset an older owner committed is in it.
	Start offsets.Checkpoint
	// Warm is the last report of this worker's standby of the shard, when
	// one ran until the claim (Standby): the handler's state is warm up to
	// Warm.Applied, and it continues from there to Start and on. Set for
	// the claim's first Process call only; nil: a cold start.
	Warm *StandbyReport
	// Parents, for a child of a reshard that has committed nothing yet,
	// are its parents' final checkpoints, loaded after the claim fenced
	// them (so no parent's owner commits after): the handler continues
	// their state from there. Nil for a shard that is no child, and for a
	// child with a checkpoint of its own (Start), which then wins.
	Parents map[shard.ID]offsets.Checkpoint

	closing *closeSignal // Closing
	closed  *atomic.Bool // set by Close
	w       *Worker
	auth    *lease.Authority
	load    *meter // nil in a Claim made by hand
}

// Lost is closed when the claim's authority ends: at the worker's local
// deadline, when another session holds the shard, or when a revoked
// handler overruns Config.DrainTimeout. It closes whatever the handler's
// context says: a handler draining after ErrRevoked learns here that it
// must stop at once. Err tells why.
//
// A Claim that no Worker issued (made by hand, as in a test of a handler)
// has no authority to lose: Lost is nil, which never closes, and Err is
// nil; its Commit fails with ErrLost without reaching any store.
func (c *Claim) Lost() <-chan struct{} {
	if c.auth == nil {
		return nil
	}
	return c.auth.Context().Done()
}

// Deadline is when the claim's authority ends unless the worker's lease
// is renewed before: the local step-down deadline, moved later by every
// renewal (the authority may end sooner; Lost says when it does). ok is
// false for a Claim no Worker issued. A handler that hands the shard's
// work to something outside its process (as package exec does to a
// child's process group) can give that the deadline, so that the work
// stops in time even if this process stalls.
func (c *Claim) Deadline() (deadline time.Time, ok bool) {
	if c.auth == nil {
		return time.Time{}, false
	}
	return c.auth.Deadline(), true
}

// Err is nil while the claim may act for its shard, and an error wrapping
// ErrLost once it may not. It also checks the local deadline against the
// clock, so a process paused across the deadline gets ErrLost from its
// first Err after waking, before any timer has run. Check it right before
// an effect that no fence protects.
func (c *Claim) Err() error {
	if c.auth == nil {
		return nil
	}
	return c.auth.Err()
}

// Commit stores offset for the shard with the claim's token. It returns an
// error wrapping ErrLost at once, without reaching the store, when the
// claim's authority has ended (see Err), and the store call is cancelled
// if the authority ends while it is in flight. It fails with an error
// wrapping offsets.ErrStaleToken once a newer owner has fenced the shard.
// Either way the handler must stop acting for the shard.
//
// A handler's context ended by a hand-off (cause ErrRevoked), before the
// call or during it, does not stop Commit: the claim drains until its
// authority ends (Config.DrainTimeout, or the lease), and the last commit
// of a handler that stops for a hand-off is the point of draining, so it
// goes through with the context the handler has. Other ends of ctx (its
// deadline, or a cancellation of the handler's own) cancel the store call
// as usual.
func (c *Claim) Commit(ctx context.Context, offset int64) error {
	if c.w == nil || c.auth == nil {
		return fmt.Errorf("%w: the claim on shard %q (token %d) was not issued by a worker, so it has no authority to commit", ErrLost, c.Shard, c.Token)
	}
	ctx, done := detachOnRevoke(ctx)
	defer done()
	return c.count(c.auth.Commit(ctx, c.w.cfg.Offsets, c.Shard, c.Token, offset))
}

// CommitWith runs commit, a write fenced with the claim's token that the
// handler makes itself (offsets/postgres's FencedTx with its own
// statements and CommitTx, say), as Commit runs the store's: refused with
// ErrLost at once once the claim's authority has ended, its context
// cancelled if the authority ends meanwhile (and not by a hand-off's end of
// ctx), and counted in the same metrics and load figures as Commit
// (commits_total by result, the commit rate). Its error is commit's, or
// the authority's cause.
func (c *Claim) CommitWith(ctx context.Context, commit func(ctx context.Context) error) error {
	if c.w == nil || c.auth == nil {
		return fmt.Errorf("%w: the claim on shard %q (token %d) was not issued by a worker, so it has no authority to commit", ErrLost, c.Shard, c.Token)
	}
	if commit == nil {
		return fmt.Errorf("%w: CommitWith on shard %q: nil function", ErrInvalidConfig, c.Shard)
	}
	ctx, done := detachOnRevoke(ctx)
	defer done()
	return c.count(c.auth.Do(ctx, commit))
}

// detachOnRevoke is ctx without the end a hand-off gives it (cause
// ErrRevoked), whether that end came before the call or comes during it:
// the claim's authority bounds the call instead. Any other end of ctx (the
// handler's own cancellation) still cancels it, and its deadline stays.
// done releases what it set up.
func detachOnRevoke(ctx context.Context) (context.Context, func()) {
	inner := context.WithoutCancel(ctx)
	var cancelDeadline context.CancelFunc = func() {}
	if d, ok := ctx.Deadline(); ok {
		inner, cancelDeadline = context.WithDeadline(inner, d)
	}
	out, cancel := context.WithCancelCause(inner)
	stop := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); !errors.Is(cause, ErrRevoked) {
			cancel(cause)
		}
	})
	return out, func() { stop(); cancel(nil); cancelDeadline() }
}

// count records a commit's outcome in the worker's metrics and load meter.
func (c *Claim) count(lost bool, err error) error {
	switch {
	case lost:
		c.w.m.commits.WithLabelValues("lost").Inc()
	case err == nil:
		c.w.m.commits.WithLabelValues("accepted").Inc()
		c.load.commit()
	case errors.Is(err, offsets.ErrStaleToken):
		c.w.m.commits.WithLabelValues("stale").Inc()
		c.w.log.Warn("commit rejected: a newer owner fenced the shard",
			zap.String("shard", string(c.Shard)), zap.Uint64("token", uint64(c.Token)), zap.Error(err))
	default:
		c.w.m.commits.WithLabelValues("error").Inc()
	}
	return err
}

// runShard is a shard runner: fence the claim's token, load the checkpoint,
// wait for its turn (tu: the shard's standby on this worker, warm when one
// ran, and any earlier run have returned), then run the handler until ctx ends, restarting it with backoff
// while the claim's authority lasts. It returns a non-nil error only when
// the fence showed the claim is already stale.
func (w *Worker) runShard(ctx context.Context, auth *lease.Authority, claim shard.Claim, tu *turn, warm *standbyRunner, closing *closeSignal) error {
	defer tu.done()
	log := w.log.With(zap.String("shard", string(claim.Shard)), zap.Uint64("token", uint64(claim.Token)))
	retry := backoff.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second, J: w.jitter}
	var start offsets.Checkpoint
	var parents map[shard.ID]offsets.Checkpoint
	for {
		err := w.cfg.Offsets.Fence(ctx, claim.Shard, claim.Token)
		if err == nil {
			start, err = w.cfg.Offsets.Load(ctx, claim.Shard)
		}
		if err == nil && start.Token == 0 {
			// A child that committed nothing yet continues its parents;
			// one that did has its own checkpoint (and fenced them then).
			parents, err = w.parents(ctx, claim)
		}
		if err == nil {
			break
		}
		if errors.Is(err, offsets.ErrStaleToken) {
			if w.historyBehind(ctx, claim, auth) {
				w.m.historyBehind.Inc()
				log.Error("fence refused the new claim although this worker still holds the shard's lock at that token: "+
					"the offsets store's floor comes from a coordinator history this coordinator does not have "+
					"(rebuilt empty, or restored from an older snapshot); no shard can run until an operator raises the fleet's generation "+
					"with `shardctl recover -prefix P -offsets STORE` (docs/operations.md, \"The coordinator lost its history\")", zap.Error(err))
				return err
			}
			log.Error("fence refused the new claim: the store has a higher token", zap.Error(err))
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := retry.Next()
		log.Warn("fencing the shard failed; retrying", zap.Error(err), zap.Duration("retry_in", wait))
		if !backoff.Sleep(ctx.Done(), wait) {
			return nil
		}
	}
	retry.Reset()
	if !tu.wait(ctx) { // Standby and Process never run at once for one shard
		return nil
	}
	var report *StandbyReport
	if warm != nil {
		report = warm.claim.Last()
	}
	// One meter for the claim's whole run: a restarted handler's reports
	// continue its predecessor's.
	load := w.load.meters.open(claim.Shard, w.cfg.LoadHalfLife)
	defer w.load.meters.close(claim.Shard, load)
	closed := new(atomic.Bool)
	c := &Claim{Claim: claim, Worker: w.cfg.ID, Start: start, Warm: report, Parents: parents, closing: closing, closed: closed, w: w, auth: auth, load: load}
	for {
		if auth.Err() != nil {
			return nil // the fence and load outlasted the authority
		}
		began := time.Now()
		err := w.process(ctx, c)
		if closed.Load() {
			return errClosed // its end is committed: released as closed, never run again here
		}
		if ctx.Err() != nil || auth.Err() != nil {
			return nil
		}
		if time.Since(began) > time.Minute {
			retry.Reset() // it ran fine for a while: start the backoff over
		}
		wait := retry.Next()
		w.m.handlerRestarts.Inc()
		log.Warn("handler returned while the shard is owned; restarting", zap.Error(err), zap.Duration("restart_in", wait))
		if !backoff.Sleep(ctx.Done(), wait) {
			return nil
		}
		// A restarted handler resumes from what is committed now, cold: a
		// standby's state was the first call's (Warm), and that call ran.
		if cp, err := w.cfg.Offsets.Load(ctx, claim.Shard); err == nil {
			c = &Claim{Claim: claim, Worker: w.cfg.ID, Start: cp, Parents: parents, closing: closing, closed: closed, w: w, auth: auth, load: load}
		} else {
			c.Warm = nil
		}
	}
}

// process calls the handler, turning a panic into an error so one bad shard
// cannot take the whole worker down.
func (w *Worker) process(ctx context.Context, c *Claim) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked on %s: %v\n%s", c.Shard, r, debug.Stack())
		}
	}()
	return w.cfg.Handler.Process(ctx, c)
}

// historyBehind reports whether a claim whose fence the store refused is
// still the holder of its lock at its token: then no newer owner raised
// the floor, and the floor comes from a history the coordinator lost.
func (w *Worker) historyBehind(ctx context.Context, claim shard.Claim, auth *lease.Authority) bool {
	if auth.Err() != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	k, err := w.cfg.Coordinator.Locks().Watch(ctx, shard.ShardLock(claim.Shard), 0)
	return err == nil && k.Held() && k.Token == claim.Token
}
