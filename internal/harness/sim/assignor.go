package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/internal/inproc"
	"github.com/shardlease/shardlease/shard"
)

// assignorVictim resolves an assignor fault when it fires: the worker whose
// current session holds P/assignor. When nobody holds it (an election under
// way) or its holder is a process already gone, the fault still strikes:
// a running worker picked from the seed and the moment, so that a replay
// strikes the same one as long as the same workers run.
// It reports whether the victim held the role.
func (r *run) assignorVictim(e Event) (*member, bool) {
	k, err := r.coord.Locks().Watch(context.Background(), shard.AssignorLock, 0)
	if err == nil && k.Held() {
		if m := r.fleet.Member(k.Worker); m != nil && m.Running() && m.Ext.session() == k.Session {
			return m, true
		}
	}
	running := r.running()
	if len(running) == 0 {
		return nil, false
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", r.sched.Seed, e.At)
	return running[h.Sum64()%uint64(len(running))], false
}

// resolve fills in the worker an assignor event strikes, and reports false
// when there is none. A fault that lasts is healed on the worker it struck,
// and a Restart restarts the worker the last assignor crash struck.
func (r *run) resolve(e *Event) bool {
	switch {
	case !e.Assignor:
		return true
	case e.Heal:
		e.Worker = r.struck[e.Kind]
	case e.Kind == Restart:
		// Unless the schedule crashed, stopped or restarted that worker
		// itself since: then its own events decide whether it runs, and a
		// restart here could meet the schedule's restart of a running one.
		id := r.struck[Crash]
		if !slices.ContainsFunc(r.sched.Events, func(x Event) bool {
			return x.Worker == id && !x.Assignor && r.crashedAt <= x.At && x.At <= e.At &&
				(x.Kind == Crash || x.Kind == Leave || x.Kind == Restart || x.Kind == Rejoin)
		}) {
			e.Worker = id
		}
	default:
		if m, held := r.assignorVictim(*e); m != nil {
			e.Worker, e.NoHolder = m.ID, !held
		}
		r.struck[e.Kind] = e.Worker
		if e.Kind == Crash {
			r.crashedAt = e.At
		}
	}
	return e.Worker != ""
}

// holdKey names the fault e puts in force, so that its heal ends it and
// nothing else (see member.hold).
func holdKey(e Event) string {
	if e.Assignor {
		return string(e.Kind) + "/assignor"
	}
	return string(e.Kind)
}

// armPause arms the assignor pause e on m: its next Assign freezes it with
// the write in hand (assignView.Assign); if it writes nothing for e.Size,
// it freezes then, empty-handed.
func (r *run) armPause(m *member, e Event) {
	m.Ext.view.armed.Store(true)
	m.Ext.view.strikeAt = time.AfterFunc(e.Size, func() {
		if m.Ext.view.armed.CompareAndSwap(true, false) && !m.Crashed() {
			r.tracef("  %s wrote no assignment in %v: frozen without a write in hand", m.ID, e.Size)
			m.Hold(holdKey(e), inproc.Hold{Mode: faults.Hang, Freeze: true})
		}
	})
}

// disarm ends an assignor pause that never struck, at its heal or at the
// end of the run.
func (v *assignView) disarm() {
	v.armed.Store(false)
	if v.strikeAt != nil {
		v.strikeAt.Stop()
	}
}

// assignView wraps one worker's coordinator for the faults of the assignor
// role: a pause armed to strike on the worker's next Assign (an
// interceptor), and a stale view of its own assignment key (its
// Assignments' Watch, whose answers it replaces).
type assignView struct {
	shard.Coordinator
	r *run
	m *member

	armed    atomic.Bool
	strikeAt *time.Timer // set and stopped by the driver only

	mu         sync.Mutex
	lag        time.Duration // answers come this late; 0: fresh
	replay     bool
	last, prev *shard.AssignmentKey // the two latest distinct answers delivered
	replayed   bool                 // prev was served again since last came
}

// Assign, on an armed pause, freezes the process with the write in hand
// — the moment a stop-the-world pause turns an assignor's write into a late
// one — and sends it when the process wakes, with a context that ignores
// the caller's end, as a request already on the wire would be sent. By
// then its session may have ended and another worker may hold P/assignor:
// the coordinator must refuse it (elections.held checks).
func (v *assignView) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op != shard.OpAssign || !v.armed.CompareAndSwap(true, false) {
		return invoke(ctx)
	}
	id, epoch := call.Session, call.Epoch
	m, r := v.m, v.r
	froze := time.Now()
	r.tracef("  %s frozen with an Assign of %d keys in hand (session %s, epoch %d)", m.ID, call.Keys, id, epoch)
	m.Hold(holdKey(Event{Kind: Pause, Assignor: true}), inproc.Hold{Mode: faults.Hang, Freeze: true})
	if !m.WaitThawed(m.Killed()) {
		return fmt.Errorf("%w: %s crashed while frozen", shard.ErrUnavailable, m.ID)
	}
	frozen := time.Since(froze)
	err := invoke(context.WithoutCancel(ctx))
	outcome := "ACCEPTED"
	switch {
	case errors.Is(err, shard.ErrUnavailable):
		outcome = "not sent, another fault cuts it off: " + err.Error()
	case err != nil:
		outcome = "refused: " + err.Error()
	}
	r.tracef("  %s woke %v after it froze; its Assign at epoch %d: %s", m.ID, frozen.Round(time.Millisecond), epoch, outcome)
	r.elect.held(m.ID, id, epoch, frozen, err)
	return err
}

// setStale serves the assignment key lag late (0: fresh), replaying an
// older answer after each new one when replay is set.
func (v *assignView) setStale(lag time.Duration, replay bool) {
	v.mu.Lock()
	v.lag, v.replay = lag, replay
	v.mu.Unlock()
}

// Assignments is the worker's assignment keys with the stale view.
func (v *assignView) Assignments() shard.Assignments {
	return staleView{v.Coordinator.Assignments(), v}
}

// staleView is the Assignments whose Watch serves a lagging reader's
// answers.
type staleView struct {
	shard.Assignments
	v *assignView
}

// Watch serves the worker its own key as a lagging reader sees
// it: each answer lag after the coordinator gave it and, with replay, the
// answer before the latest one once more right after the latest (its
// index goes back, and the worker acts on it until the next answer comes,
// lag later). The worker must act safely on all of it: the locks decide.
func (sv staleView) Watch(ctx context.Context, worker string, after uint64) (shard.AssignmentKey, error) {
	v := sv.v
	v.mu.Lock()
	lag, replay := v.lag, v.replay
	if replay && !v.replayed && v.prev != nil && v.last != nil && v.last.Index == after && v.prev.Index < after {
		v.replayed = true
		old := *v.prev
		v.mu.Unlock()
		v.r.staleServed.Add(1)
		return old, nil
	}
	v.mu.Unlock()
	k, err := sv.Assignments.Watch(ctx, worker, after)
	if err != nil || lag == 0 {
		v.delivered(k, err)
		return k, err
	}
	if err := shard.Delay(ctx, lag); err != nil {
		return shard.AssignmentKey{}, err
	}
	v.delivered(k, nil)
	if now, err := v.r.coord.Assignments().Watch(ctx, worker, 0); err == nil && now.Index != k.Index {
		v.r.staleServed.Add(1) // the assignor rewrote the key while the answer was held
	}
	return k, nil
}

func (v *assignView) delivered(k shard.AssignmentKey, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil || v.last != nil && v.last.Index == k.Index {
		return
	}
	v.prev, v.last, v.replayed = v.last, &k, false
}

// isRefused reports whether err is the coordinator refusing an assignor's
// write.
func isRefused(err error) bool { return errors.Is(err, shard.ErrNotAssignor) }
