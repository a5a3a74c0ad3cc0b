package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// member is one worker process of the simulated fleet: one Worker and the
// handles that inject its faults. A crashed worker restarted under the same
// ID is a new member.
type member struct {
	id    string
	n     int // instance number, for seeding
	w     *worker.Worker
	fault *faults.Coordinator
	slow  *slowRenewals
	gate  faults.Gate // closed: the process is frozen (its handlers stop where they are)
	view  *assignView

	// killed ends when the process crashes: what a frozen process waits
	// on besides its gate.
	killed context.Context
	kill   context.CancelFunc

	dead    atomic.Bool  // crashed: frozen handlers never write again
	slowMax atomic.Int64 // time.Duration: handler steps take up to this, ignoring ctx; 0: normal
	sid     atomic.Value // shard.SessionID: the latest session it created
	cancel  context.CancelFunc
	done    chan error
	err     error // Run's result, once done
	stopped bool  // Run has returned and err is set
	left    bool  // told to leave

	mu    sync.Mutex
	holds map[string]hold // the faults in force on the process, by key (see hold)
}

// hold is one fault's grip on a process: the mode it puts its coordinator
// calls in, and whether it freezes the process (closes its gate).
type hold struct {
	mode   faults.Mode
	freeze bool
}

// hold puts a fault in force on m under key until unhold(key). Faults may
// overlap on one process — an assignor fault finds its victim only when it
// strikes, so the schedule cannot keep it off a worker already partitioned —
// and the heal of one must not end another: the calls hang while any fault
// hangs them, fail while any other fails them, and the gate stays closed
// while any fault freezes the process.
func (m *member) hold(key string, h hold) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holds == nil {
		m.holds = map[string]hold{}
	}
	m.holds[key] = h
	m.applyHolds()
}

// unhold ends the fault under key; ending one not in force changes nothing
// else (a heal due from before a restart reaches the new process).
func (m *member) unhold(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.holds, key)
	m.applyHolds()
}

func (m *member) applyHolds() {
	if m.dead.Load() {
		return // a crash is for good: calls fail, the gate stays closed
	}
	mode, freeze := faults.Healthy, false
	for _, h := range m.holds {
		switch { // a hang wins over a failure: a frozen process fails nothing
		case h.mode == faults.Hang:
			mode = faults.Hang
		case h.mode == faults.Fail && mode != faults.Hang:
			mode = faults.Fail
		}
		freeze = freeze || h.freeze
	}
	m.fault.Set(mode)
	if freeze {
		m.gate.Close()
	} else {
		m.gate.Open()
	}
}

// session returns the latest session m created, or "" if none yet.
func (m *member) session() shard.SessionID {
	sid, _ := m.sid.Load().(shard.SessionID)
	return sid
}

func (m *member) setSession(sid shard.SessionID) { m.sid.Store(sid) }

// isLost reports whether err (a context cause) says authority is gone.
func isLost(err error) bool { return errors.Is(err, worker.ErrLost) }

// spawn starts a worker named id.
func (r *run) spawn(id string) *member {
	r.instances++
	m := &member{id: id, n: r.instances, done: make(chan error, 1)}
	m.killed, m.kill = context.WithCancel(context.Background())
	m.fault = faults.Wrap(&elected{Coordinator: r.coord, el: r.elect, worker: id})
	m.slow = &slowRenewals{Coordinator: m.fault}
	m.view = &assignView{Coordinator: m.slow, r: r, m: m}
	su := r.sched.Setup
	w, err := worker.New(worker.Config{
		ID:               id,
		Fleet:            shard.Config{Shards: su.Shards},
		Coordinator:      &recorder{Coordinator: m.view, m: m, l: r.leases, runs: r.runs, c: r.c},
		Offsets:          r.store,
		Handler:          r.handler(m),
		Policy:           su.Policy,
		DrainTimeout:     su.DrainTimeout,
		MaxMovesInFlight: su.MaxMovesInFlight,
		Logger:           r.opts.Logger,
		JitterSeed:       r.sched.Seed*1000003 + uint64(m.n),
	})
	if err != nil {
		r.c.violate("worker.New(%s): %v", id, err)
		return nil
	}
	m.w = w
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.done <- w.Run(ctx) }()
	r.members[id] = m
	r.all = append(r.all, m)
	return m
}

// handler is the simulated consumer of one shard's stream. Each step it
// processes a few messages (its offset advances by 1..5) and commits the new
// offset with its claim's token. Its offsets follow from the checkpoint it
// started from, so an owner that started below an accepted commit shows up
// as an offset going backwards.
//
// A pause can strike between computing an offset and sending its commit
// (the gate): the frozen handler wakes up and sends the commit without
// looking at its context, as a process that was stopped would; Commit
// itself checks the claim against the clock. A slow step ignores its
// context and Claim.Lost. A handler revoked gracefully commits once more
// and returns; one told it is lost, by its context or by Commit, returns
// at once. Every invocation is recorded in the run log (runLog), with
// the stretches in which it was frozen or past its lost claim in a slow
// step.
func (r *run) handler(m *member) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		r.store.started(c.Claim, c.Start)
		run := r.runs.begin(m.id, m.n, c.Claim, r.c.elapsed())
		defer func() { r.runs.end(run, r.c.elapsed()) }()
		if m.dead.Load() {
			// Started as its process crashed, after runLog.crash looked.
			r.runs.crash(m.n, r.c.elapsed())
		}
		defer r.handlers.begin(m.id, c.Claim, ctx)()
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s/%s/%d", r.sched.Seed, m.id, c.Shard, c.Token)
		rng := rand.New(rand.NewPCG(h.Sum64(), uint64(m.n)))
		offset := c.Start.Offset
		for {
			if slow := time.Duration(m.slowMax.Load()); slow > 0 {
				r.slowStep(run, c, time.Duration(rng.Int64N(int64(slow)))+time.Millisecond)
			} else {
				t := time.NewTimer(time.Duration(200+rng.IntN(800)) * time.Millisecond)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
			}
			if ctx.Err() != nil {
				if !isLost(context.Cause(ctx)) && !m.dead.Load() {
					// Revoked: commit what was processed, then return.
					_ = c.Commit(context.WithoutCancel(ctx), offset+1)
				}
				return nil
			}
			r.handlers.acting(m.id, c.Claim)
			offset += 1 + rng.Int64N(5)
			r.runs.halt(run, r.c.elapsed())
			m.gate.Wait(context.Background()) // a frozen process does not see ctx end
			if m.dead.Load() {
				return nil // a crashed process never wakes up
			}
			r.runs.resume(run, r.c.elapsed())
			err := c.Commit(context.WithoutCancel(ctx), offset)
			switch {
			case errors.Is(err, worker.ErrLost):
				return nil // the contract: return at once
			case errors.Is(err, offsets.ErrStaleToken):
				<-ctx.Done() // a newer owner fenced the shard: stop acting for it
				return nil
			}
		}
	})
}

// slowStep takes d, ignoring the handler's context and its claim's Lost,
// as a handler stuck in a slow call would. Once Lost has closed, the
// handler is out of its contract and the worker cannot stop it: the rest
// of the step is recorded as not running (see runLog).
func (r *run) slowStep(run *handlerRun, c *worker.Claim, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return
	case <-c.Lost():
	}
	r.runs.halt(run, r.c.elapsed())
	<-t.C
	r.runs.resume(run, r.c.elapsed())
}

// apply plays one event of the schedule.
func (r *run) apply(e Event) {
	resolved := r.resolve(&e)
	if r.opts.Trace != nil {
		r.opts.Trace(e.String())
	}
	if !resolved {
		r.tracef("  no worker to strike")
		return
	}
	if !e.Heal {
		r.faults[e.Kind]++
		if e.Assignor && !e.NoHolder {
			r.assignorFaults[e.Kind]++
		}
	}
	m := r.members[e.Worker]
	switch e.Kind {
	case ClockJump:
		r.clock.jump(e.Size)
		r.jumps.add(time.Now())
		r.coord.Sessions() // let the coordinator notice what expired, as its timers would
		return
	case Join, Restart:
		if m != nil && !m.dead.Load() && !m.left {
			r.c.violate("schedule: %s %s, which is running", e.Kind, e.Worker)
			return
		}
		r.spawn(e.Worker)
		return
	}
	if m == nil {
		r.c.violate("schedule: %s of %s, which never ran", e.Kind, e.Worker)
		return
	}
	if m.dead.Load() || m.left && !e.Heal {
		return // a fault due after a crash or a leave; a crash's heals too
	}
	// A leave's heals still run: a leave that came during a pause or a cut
	// (an assignor fault's victim is known only when it strikes) must not
	// stay frozen, turning the graceful stop into an expiry.
	switch {
	case e.Kind == Crash:
		// Every call fails, handlers freeze forever, nothing is released.
		m.dead.Store(true) // before the crash is logged: see handler
		m.kill()
		r.runs.crash(m.n, r.c.elapsed())
		m.gate.Close()
		m.fault.Set(faults.Fail)
		m.cancel() // Run returns after its drain timeout; its calls all fail
	case e.Kind == Leave:
		m.left = true
		m.cancel()
	case e.Kind == Pause && e.Assignor && !e.Heal:
		r.armPause(m, e)
	case e.Kind == Pause && !e.Heal:
		m.hold(holdKey(e), hold{mode: faults.Hang, freeze: true})
	case e.Kind == PartitionFail && !e.Heal:
		m.hold(holdKey(e), hold{mode: faults.Fail})
	case e.Kind == PartitionHang && !e.Heal:
		m.hold(holdKey(e), hold{mode: faults.Hang})
	case e.Kind == Destroy && !e.Heal:
		r.destroy(m, e)
	case e.Kind == Pause || e.Kind == PartitionFail || e.Kind == PartitionHang || e.Kind == Destroy:
		if e.Assignor {
			m.view.disarm() // armed on this process, and never struck
		}
		m.unhold(holdKey(e))
	case e.Kind == StaleAssignment:
		m.view.setStale(e.Size, e.Replay) // 0 on heal
	case e.Kind == SlowHandlers:
		m.slowMax.Store(int64(e.Size)) // 0 on heal
	case e.Kind == SlowRenewals:
		m.slow.set(e.Size, e.LateReply) // 0 on heal
	}
}
