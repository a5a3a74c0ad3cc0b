package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Standby is the standby side a Handler may also implement, for stateful
// work: the worker runs it for the shards its assignment lists as standby
// (shard.Assignment.Standby) and that it does not own, so that the state a
// shard needs is warm before the shard moves here (a warm move) or in case
// its owner crashes (a standby for failover).
//
// A standby holds no lock and has no token: it cannot fence and cannot
// commit, and its reads are not effects. It may read what the owner
// committed (StandbyClaim.Committed) and build its state up to it, and
// says how far it got (StandbyClaim.Report). Its context ends with cause
// ErrPromoted when this worker takes the shard's lock (the handler's
// Process is called once Standby has returned, with Claim.Warm set to its
// last report), and with ErrStandbyDropped when the shard leaves the
// standby list or the worker stops or loses its term. Standby is called
// again, after a backoff, if it returns while the shard is still listed.
// The worker never runs Standby and Process for one shard at once.
type Standby interface {
	Standby(ctx context.Context, s *StandbyClaim) error
}

// Causes of a standby's context.
var (
	// ErrPromoted: this worker took the shard's lock; Process follows.
	ErrPromoted = errors.New("worker: promoted: this worker now owns the shard")
	// ErrStandbyDropped: the shard is no longer this worker's standby.
	ErrStandbyDropped = errors.New("worker: standby dropped")
)

// StandbyClaim is one shard's standby on this worker.
type StandbyClaim struct {
	Shard shard.ID
	// Worker is the ID of the worker running the standby.
	Worker string

	store  offsets.Store
	notify func() // tells the worker's loop a report changed
	mu     sync.Mutex
	report *StandbyReport
}

// StandbyReport is how far a standby's state has got, as it last said.
type StandbyReport struct {
	// Applied is the last offset the standby's state includes.
	Applied int64
	// CaughtUp says that the state includes everything the owner had
	// committed when the standby last looked.
	CaughtUp bool
	// At is when the standby reported it.
	At time.Time
}

// Committed returns the shard's checkpoint as the offsets store holds it
// now: everything the owner committed. It only reads.
func (s *StandbyClaim) Committed(ctx context.Context) (offsets.Checkpoint, error) {
	return s.store.Load(ctx, s.Shard)
}

// Report records how far the standby's state has got: the last offset
// its state includes (-1: nothing yet) and whether that is everything the
// owner had committed when it last looked (StandbyClaim.Committed). The
// worker passes it on to the assignor (a caught-up standby makes a move
// here warm; the most advanced one is promoted when the owner is lost):
// at once when caughtUp changes, at the load report interval for a new
// applied offset alone. It does no I/O and never blocks.
func (s *StandbyClaim) Report(applied int64, caughtUp bool) {
	s.mu.Lock()
	prev := s.report
	s.report = &StandbyReport{Applied: applied, CaughtUp: caughtUp, At: time.Now()}
	s.mu.Unlock()
	if s.notify != nil && (prev == nil || prev.Applied != applied || prev.CaughtUp != caughtUp) {
		s.notify()
	}
}

// Last returns the standby's last report, or nil when it made none.
func (s *StandbyClaim) Last() *StandbyReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.report == nil {
		return nil
	}
	r := *s.report
	return &r
}

// standbyRunner is one standby's goroutine as the loop sees it.
type standbyRunner struct {
	claim  *StandbyClaim
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the goroutine returned
}

// followStandbys starts a standby for each shard of list (the key's
// standby shards) that the worker does not run, and ends those no longer
// listed. A shard listed in the key's shards too keeps its standby until
// this worker takes the lock (a warm move: the lock may be in its
// previous owner's lock-delay for a while). It does nothing when the
// handler has no standby side.
func (lp *loop) followStandbys(list []shard.ID) {
	sb, ok := lp.w.cfg.Handler.(Standby)
	if !ok {
		return
	}
	want := make(map[shard.ID]bool, len(list))
	for _, id := range list {
		if _, running := lp.runners[id]; !running {
			want[id] = true
		}
	}
	for id, r := range lp.standbys {
		if !want[id] {
			r.cancel(ErrStandbyDropped)
			delete(lp.standbys, id)
		}
	}
	for _, id := range list {
		if _, on := lp.standbys[id]; want[id] && !on {
			lp.standbys[id] = lp.w.startStandby(sb, id)
		}
	}
}

// promote ends shard id's standby, if one runs, with ErrPromoted, and
// returns it for the owner's runner to wait on.
func (lp *loop) promote(id shard.ID) *standbyRunner {
	r, ok := lp.standbys[id]
	if !ok {
		return nil
	}
	delete(lp.standbys, id)
	r.cancel(ErrPromoted)
	return r
}

// cancelStandbys ends every standby (the term ends, or the worker stops)
// and returns them, for awaitStandbys.
func (lp *loop) cancelStandbys() []*standbyRunner {
	var out []*standbyRunner
	for id, r := range lp.standbys {
		r.cancel(ErrStandbyDropped)
		delete(lp.standbys, id)
		out = append(out, r)
	}
	return out
}

// awaitStandbys waits for the standbys until within passes, and says how
// many were still running then (they end on their own; turns keeps the
// shard's next run behind them).
func (lp *loop) awaitStandbys(rs []*standbyRunner, within time.Duration) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for i, r := range rs {
		select {
		case <-r.done:
		case <-deadline.C:
			lp.w.log.Warn("standbys did not return in time after their context ended; the shards' next runs wait for them",
				zap.Int("standbys", len(rs)-i), zap.Duration("waited", within))
			return
		}
	}
}

// standbyChanged wakes the loop to report the standbys (reportStandbys);
// a wake-up already pending covers this one.
func (w *Worker) standbyChanged() {
	select {
	case w.standbyWake <- struct{}{}:
	default:
	}
}

// startStandby runs sb's standby for shard id until its context ends,
// calling it again after a backoff when it returns early.
//
// Its context is the worker's own, not the term's: the loop ends it
// (promote, followStandbys, cancelStandbys), so that its cause says why.
// It takes its turn (turns) behind any earlier run of the shard.
func (w *Worker) startStandby(sb Standby, id shard.ID) *standbyRunner {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &standbyRunner{claim: &StandbyClaim{Shard: id, Worker: w.cfg.ID, store: w.cfg.Offsets, notify: w.standbyChanged}, cancel: cancel, done: make(chan struct{})}
	tu := w.turns.join(id)
	w.log.Info("standby started", zap.String("shard", string(id)))
	go func() {
		defer close(r.done)
		defer tu.done()
		if !tu.wait(ctx) {
			return
		}
		retry := backoff.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second, J: w.jitter}
		for {
			err := runStandby(ctx, sb, r.claim)
			if ctx.Err() != nil {
				return
			}
			wait := retry.Next()
			w.log.Warn("standby returned while the shard is still listed; starting it again", zap.String("shard", string(id)),
				zap.Error(err), zap.Duration("restart_in", wait))
			if !backoff.Sleep(ctx.Done(), wait) {
				return
			}
		}
	}()
	return r
}

// runStandby calls the standby, turning a panic into an error.
func runStandby(ctx context.Context, sb Standby, c *StandbyClaim) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("standby panicked on %s: %v\n%s", c.Shard, r, debug.Stack())
		}
	}()
	return sb.Standby(ctx, c)
}
