package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/internal/inproc"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// member is one worker process of the simulated fleet (inproc.Member:
// its worker, fault layer and gate). A crashed worker restarted under the
// same ID is a new member.
type member = inproc.Member[proc]

// proc is what the simulation keeps beside each member: the fault handles
// of its own, and whether Run's result was checked.
type proc struct {
	slow    *slowRenewals
	view    *assignView
	slowMax atomic.Int64 // time.Duration: handler steps take up to this, ignoring ctx; 0: normal
	sid     atomic.Value // shard.SessionID: the latest session it created
	checked bool         // Run has returned and its result was checked
}

// session returns the latest session the process created, or "" if none yet.
func (p *proc) session() shard.SessionID {
	sid, _ := p.sid.Load().(shard.SessionID)
	return sid
}

func (p *proc) setSession(sid shard.SessionID) { p.sid.Store(sid) }

// isLost reports whether err (a context cause) says authority is gone.
func isLost(err error) bool { return errors.Is(err, worker.ErrLost) }

// spawn starts a worker named id. Faults may overlap on one process — an
// assignor fault finds its victim only when it strikes, so the schedule
// cannot keep it off a worker already partitioned — so each holds it under
// its own key (holdKey, inproc.Member.Hold).
func (r *run) spawn(id string) *member {
	m := r.fleet.New(id, shard.Intercept(closeWatch{r.coord, r.lineage}, r.elect.intercept(id)))
	m.Ext.slow = &slowRenewals{}
	m.Ext.view = &assignView{r: r, m: m}
	m.Ext.view.Coordinator = shard.Intercept(shard.Intercept(m.Coordinator(), m.Ext.slow.intercept), m.Ext.view.intercept)
	rec := &recorder{m: m, l: r.leases, runs: r.runs, c: r.c}
	su := r.sched.Setup
	err := r.fleet.Start(m, worker.Config{
		Fleet:            shard.Config{Shards: su.Shards},
		Coordinator:      releaseWatch{shard.Intercept(m.Ext.view, rec.intercept), r.lineage, id},
		Offsets:          lineageStore{r.store, r.lineage},
		Handler:          r.handler(m),
		Policy:           su.Policy,
		DrainTimeout:     su.DrainTimeout,
		MaxMovesInFlight: su.MaxMovesInFlight,
		Zone:             su.ZoneOf(id),
		LoadBalance:      su.Load.policy(),
		LoadReportEvery:  su.Load.ReportEvery,
		LoadHalfLife:     su.Load.HalfLife,
		RejoinGrace:      r.sched.rejoinGrace(id, r.c.elapsed()),
		DrainBeforeStop:  r.sched.drainBeforeStop(id, r.c.elapsed()),
		Logger:           r.opts.Logger,
		JitterSeed:       r.sched.Seed*1000003 + uint64(m.N),
	})
	if err != nil {
		r.c.violate("worker.New(%s): %v", id, err)
		return nil
	}
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
	process := r.process(m)
	if r.sched.Setup.Warm {
		return standbyHandler{process}
	}
	return process
}

// standbyHandler is the simulated consumer with a standby side: it reads
// the shard's checkpoint every 300 ms and reports itself caught up to it.
// It never writes: a standby is not an owner.
type standbyHandler struct{ worker.HandlerFunc }

func (h standbyHandler) Standby(ctx context.Context, s *worker.StandbyClaim) error {
	for {
		if cp, err := s.Committed(ctx); err == nil {
			s.Report(cp.Offset, true)
		}
		t := time.NewTimer(300 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// process is handler's Process.
func (r *run) process(m *member) worker.HandlerFunc {
	return worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		r.store.Started(c.Claim, c.Start)
		if c.Warm != nil {
			r.warmStarts.Add(1)
		}
		if r.lineage.start(m.ID, c.Claim, c.Start, c.Parents) {
			r.reshards.childStarts.Add(1)
		}
		run := r.runs.begin(m.ID, m.N, c.Claim, r.c.elapsed())
		defer func() { r.runs.end(run, r.c.elapsed()) }()
		if m.Crashed() {
			// Started as its process crashed, after runLog.crash looked.
			r.runs.crash(m.N, r.c.elapsed())
		}
		defer r.handlers.begin(m.ID, c.Claim, ctx)()
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s/%s/%d", r.sched.Seed, m.ID, c.Shard, c.Token)
		seed := h.Sum64()
		rng := rand.New(rand.NewPCG(seed, uint64(m.N)))
		offset := c.Start.Offset // a child's too: its own checkpoint (Parents were checked at its start)
		closing := c.Closing()
		var cl *closer // set once asked to close the shard for a reshard
		for {
			if slow := time.Duration(m.Ext.slowMax.Load()); slow > 0 {
				r.slowStep(run, c, time.Duration(rng.Int64N(int64(slow)))+time.Millisecond)
			} else {
				t := time.NewTimer(time.Duration(200+rng.IntN(800)) * time.Millisecond)
				select {
				case <-ctx.Done():
				case <-t.C:
				case <-closing:
					closing = nil // asked: the step ends here, and the closer decides when to close
				}
				t.Stop()
			}
			if cl == nil && asked(c.Closing()) {
				cl = newCloser(seed, m.N)
				r.lineage.asked(c.Claim)
			}
			if ctx.Err() != nil {
				switch {
				case isLost(context.Cause(ctx)) || m.Crashed():
				case cl != nil && cl.onRevoke:
					// Revoked while closing: its end is what was processed.
					r.closeShard(ctx, c, offset+1, cl)
				default:
					// Revoked: commit what was processed, then return.
					_ = c.Commit(context.WithoutCancel(ctx), offset+1)
				}
				return nil
			}
			r.handlers.acting(m.ID, c.Claim)
			r.reportLoad(rng, c, c.Shard)
			offset += 1 + rng.Int64N(5)
			r.runs.halt(run, r.c.elapsed())
			m.WaitThawed(context.Background()) // a frozen process does not see ctx end
			if m.Crashed() {
				return nil // a crashed process never wakes up
			}
			r.runs.resume(run, r.c.elapsed())
			if cl != nil && cl.due() {
				r.closeShard(ctx, c, offset, cl)
				return nil
			}
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

// closer is how a handler asked to close its shard (Claim.Closing) goes
// about it, drawn apart from its other choices (which stay as they were
// before reshards existed): half of them close at the end of the step in
// which they were asked, the others a bit late, after one to three more
// steps (up to 3 s, or more in slow steps); revoked before that, half of
// them close, the others commit as any revoked handler does.
type closer struct {
	late     int // steps to go before the close
	wasLate  bool
	onRevoke bool
}

func newCloser(seed uint64, proc int) *closer {
	rng := rand.New(rand.NewPCG(seed, uint64(proc)^0xc105ec105ec105e))
	c := &closer{onRevoke: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		c.late = 1 + rng.IntN(3)
		c.wasLate = true
	}
	return c
}

// due reports whether the close is due at the end of this step, and
// counts the step.
func (c *closer) due() bool {
	if c.late == 0 {
		return true
	}
	c.late--
	return false
}

// asked reports whether closing is closed.
func asked(closing <-chan struct{}) bool {
	select {
	case <-closing:
		return true
	default:
		return false
	}
}

// closeShard commits end as the shard's end with Claim.Close and, if it
// went through, records the close. A close that fails (ErrLost, or
// ErrStaleToken after a newer owner fenced the shard) leaves the shard
// open: its next owner is asked to close it again. One refused with
// ErrNotClosing (the reshard was cancelled after the ask) leaves it open
// for good.
func (r *run) closeShard(ctx context.Context, c *worker.Claim, end int64, cl *closer) {
	err := c.Close(context.WithoutCancel(ctx), end)
	switch {
	case err == nil:
		r.lineage.closed(c.Claim, end)
		r.reshards.closes.Add(1)
		if cl.wasLate {
			r.reshards.lateCloses.Add(1)
		}
	case errors.Is(err, offsets.ErrStaleToken):
		<-ctx.Done() // a newer owner fenced the shard: stop acting for it
	case errors.Is(err, worker.ErrNotClosing):
		// The reshard was cancelled since the ask: the shard stays open
		// (its handler returns and is started again, not asked).
		r.reshards.unasked.Add(1)
	case !errors.Is(err, worker.ErrLost):
		r.c.violate("%v: Close(%d) failed: %v", c.Claim, end, err)
	}
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
	m := r.fleet.Member(e.Worker)
	switch e.Kind {
	case Reshard, ReshardCancel:
		r.reshard(e)
		return
	case ClockJump:
		r.clock.jump(e.Size)
		r.jumps.add(time.Now())
		r.coord.LiveSessions() // let the coordinator notice what expired, as its timers would
		return
	case Join, Restart:
		if m != nil && m.Running() {
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
	if e.Kind == Rejoin && e.Heal {
		r.rejoin(m, e) // its process has left: the heal starts a new one
		return
	}
	if m.Crashed() || m.Left() && !e.Heal {
		return // a fault due after a crash or a leave; a crash's heals too
	}
	// A leave's heals still run: a leave that came during a pause or a cut
	// (an assignor fault's victim is known only when it strikes) must not
	// stay frozen, turning the graceful stop into an expiry.
	switch {
	case e.Kind == Crash:
		// Every call fails, handlers freeze forever, nothing is released.
		m.Crash() // Crashed before the crash is logged: see handler
		r.runs.crash(m.N, r.c.elapsed())
	case e.Kind == Leave:
		if r.sched.drainBeforeStop(m.ID, e.At) > 0 {
			r.drainedLeaves.Add(1) // its process was started to drain before this stop
		}
		m.Leave()
	case e.Kind == Rejoin:
		r.rejoin(m, e)
	case e.Kind == Pause && e.Assignor && !e.Heal:
		r.armPause(m, e)
	case e.Kind == Pause && !e.Heal:
		m.Hold(holdKey(e), inproc.Hold{Mode: faults.Hang, Freeze: true})
	case e.Kind == PartitionFail && !e.Heal:
		m.Hold(holdKey(e), inproc.Hold{Mode: faults.Fail})
	case e.Kind == PartitionHang && !e.Heal:
		m.Hold(holdKey(e), inproc.Hold{Mode: faults.Hang})
	case e.Kind == Destroy && !e.Heal:
		r.destroy(m, e)
	case e.Kind == Pause || e.Kind == PartitionFail || e.Kind == PartitionHang || e.Kind == Destroy:
		if e.Assignor {
			m.Ext.view.disarm() // armed on this process, and never struck
		}
		m.Unhold(holdKey(e))
	case e.Kind == StaleAssignment:
		m.Ext.view.setStale(e.Size, e.Replay) // 0 on heal
	case e.Kind == SlowHandlers:
		m.Ext.slowMax.Store(int64(e.Size)) // 0 on heal
	case e.Kind == SlowRenewals:
		m.Ext.slow.set(e.Size, e.LateReply) // 0 on heal
	}
}
