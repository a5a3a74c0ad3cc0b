package sim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/inproc"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

// Options configure Run.
type Options struct {
	// Logger receives the workers' logs. Default: none.
	Logger *zap.Logger
	// Trace, if set, receives each event as it is played and each
	// violation as it is found.
	Trace func(string)
}

// Result is what one seed's run found.
type Result struct {
	Schedule Schedule
	// Simulated is how much simulated time the run took.
	Simulated time.Duration
	// Faults counts the faults played, by kind.
	Faults map[Kind]int
	// Commits accepted and stale commits rejected by the fence, fences
	// raised, handler starts, handlers ended with ErrLost.
	Commits, StaleRejected, Fences, Starts, LostEnds int64
	// Overlaps counts owners that started while an older owner still
	// believed, within its local deadline, that it owned the shard. Only a
	// coordinator clock jump can cause one; the fence rejected the older
	// owner's writes.
	Overlaps int64
	// RunOverlaps counts handlers of two tokens of a shard that ran at
	// once, or a stale owner's commits after a newer owner's start, within
	// a TTL after a coordinator clock jump (see runLog). Anything else of
	// the kind is a violation.
	RunOverlaps int64
	// Settle is how long after the last fault the fleet took to own every
	// shard again with max−min ≤ 1; Bound is what the lease policy allows.
	Settle, Bound time.Duration
	// AssignorFaults counts the faults played that struck whoever held
	// P/assignor, by kind.
	AssignorFaults map[Kind]int
	// Elections counts the assignor epochs won; Contested lists when each
	// was won that another candidate campaigned within 250 ms of. AssignsAccepted and
	// AssignsRefused count the assignors' Assign calls the coordinator
	// accepted and refused as not the assignor; HeldSent the writes
	// assignors sent on waking from a pause that froze them with the write
	// in hand, HeldRefused those refused.
	Elections                                              int
	Contested                                              []time.Duration
	AssignsAccepted, AssignsRefused, HeldSent, HeldRefused int64
	// StaleServed counts the answers stale-assignment faults served that
	// were no longer the key's current value: a replayed older one, or one
	// the assignor rewrote while it was held.
	StaleServed int64
	// WarmStarts counts handler starts with a standby's warm state
	// (worker.Claim.Warm), in seeds whose handlers have a standby side.
	WarmStarts int64
	// DrainedLeaves counts the leaves that drained first (Config.
	// DrainBeforeStop).
	DrainedLeaves int64
	// Load is what a load-balancing seed's settling found.
	Load LoadResult
	// Reshard is what the seed's reshards did.
	Reshard ReshardResult
	// Violations lists every broken invariant; empty when the run passed.
	Violations []string
}

// Bound is how long after the last fault has ended a fleet may take to own
// every shard again, balanced to max−min ≤ 1:
//
//	TTL + LockDelay                  the last stale session expires; its shards and the assignor lock
//	                                 leave lock-delay
//	+ 1.25·LockDelay + 25 ms          a candidate's wait before it campaigns again after a lock-delay
//	+ DrainTimeout + RenewEvery      a worker that stepped down waits for its handlers and tries to end its session
//	+ 5 s + 2 s                      the worker's rejoin backoff and join retry caps
//	+ 2·StuckAfter                   a worker given shards it cannot take yet (lock-delay, a retry backoff
//	                                 of up to 2 s) before it is judged stuck and they move
//	+ waves·(DrainTimeout + 1 s)     hand-offs in waves of MaxMovesInFlight: each drains, releases and is
//	                                 placed again
//	+ 1 s                            watch coalescing and a handler's last step
//	+ reshardBound                   a seed that reshards: a reshard still running must finish first
//
// In a seed that reshards, the waves count the most shards any of its
// layouts has (Setup.MostShards).
func Bound(su Setup) time.Duration {
	p := su.Policy
	ld := p.EffectiveLockDelay()
	stuck := stuckAfter(su)
	shards := max(su.Shards, su.MostShards)
	perWave := su.MaxMovesInFlight
	if perWave <= 0 {
		perWave = rebalance.DefaultMaxMovesInFlight(shards, su.MaxWorkers)
	}
	waves := time.Duration((shards+perWave-1)/perWave + 1)
	return p.TTL + ld + ld*5/4 + 25*time.Millisecond + su.DrainTimeout + p.RenewEvery + 7*time.Second +
		2*stuck + waves*(su.DrainTimeout+time.Second) + time.Second + reshardBound(su)
}

// reshardBound is what a seed that reshards adds to the bound: a reshard
// still running when the faults end must finish, and the assignor hands
// nothing off until it has. Its parents close in waves of the move
// budget (MaxMovesInFlight, or its default for the fleet: one worker's
// share, at least 16; counted here as its least, 16, which makes the
// most waves), each wave in at most 6 s: its holders told to close (a key write and a
// watch round, 1 s), their handlers closing up to four steps later (the
// step they were asked in and up to three late ones, 4 s), the assignor
// seeing the releases and opening the children (a listing and a config
// write, 1 s); then the last children are placed and start, and the
// reshard is marked done (2 s).
func reshardBound(su Setup) time.Duration {
	if su.MostShards == 0 {
		return 0
	}
	parents := max(su.Shards, su.MostShards)
	perWave := su.MaxMovesInFlight
	if perWave <= 0 {
		perWave = rebalance.DefaultMaxMovesInFlight(1, 1) // the least default
	}
	return time.Duration((parents+perWave-1)/perWave)*6*time.Second + 2*time.Second
}

// stableFor is how long a settled fleet must stay as it is: a few of the
// assignor's steps and the workers' reconciles.
const stableFor = 3 * time.Second

// run is one seed's fleet and its checkers.
type run struct {
	opts    Options
	sched   Schedule
	loadRes LoadResult

	warmStarts    atomic.Int64 // handler starts with warm state
	drainedLeaves atomic.Int64 // leaves with a drain before the stop

	clock    *jumpClock
	coord    *memory.Coordinator
	store    *inproc.Auditor
	leases   *leases
	handlers *handlers
	runs     *runLog
	jumps    *jumps
	c        *checker
	elect    *elections
	lineage  *lineage
	reshards reshards

	fleet  inproc.Fleet[proc]
	faults map[Kind]int
	// assignorFaults counts the assignor faults played; struck, by kind,
	// the worker the latest one struck, which its heal (or, for a crash,
	// the restart) goes to.
	assignorFaults map[Kind]int
	struck         map[Kind]string
	rejoining      map[string]bool // workers a Rejoin stopped, until its heal starts them: whether they had an assignment key
	crashedAt      time.Duration   // when the latest assignor crash struck
	staleServed    atomic.Int64    // assignment answers served no longer current
}

// checkEvery is how often the driver checks the invariants between events.
const checkEvery = 250 * time.Millisecond

// Run plays seed's schedule on a whole fleet — the embedded coordinator,
// workers with handlers, an in-memory offset store behind an auditor — and
// checks the invariants after every step. It must be called inside a
// testing/synctest bubble (synctest.Test), where the run's minutes of
// simulated time take a fraction of a second; everything it starts has
// ended when it returns.
func Run(seed uint64, opts Options) Result {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	sched := NewSchedule(seed)
	su := sched.Setup
	c := &checker{start: time.Now(), trace: opts.Trace}
	r := &run{
		opts: opts, sched: sched, c: c,
		clock:  &jumpClock{},
		leases: newLeases(su.Policy),
		jumps:  &jumps{window: su.Policy.TTL},
		faults: map[Kind]int{},
		elect:  newElections(c, su.Policy.TTL),

		assignorFaults: map[Kind]int{},
		struck:         map[Kind]string{},
		rejoining:      map[string]bool{},
	}
	r.coord = memory.New(memory.WithClock(r.clock))
	r.lineage = newLineage(c, r.storedConfig, func(cl shard.Claim) bool { _, ok := r.leases.session(cl); return ok })
	r.lineage.setConfig(shard.Config{Shards: su.Shards})
	r.handlers = newHandlers(c, r.leases, r.jumps)
	r.runs = newRunLog(c, r.leases, r.jumpExcuses)
	r.store = newAuditor(offmem.New(), c, func(cl shard.Claim) { r.runs.effect(cl, c.elapsed()) })
	if opts.Trace != nil {
		opts.Trace(sched.String())
	}

	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { defer close(watched); watchTokens(watchCtx, r.coord, c) }()

	if su.Standbys > 0 { // stored before any worker proposes its own (the same, but for the standbys)
		p := shard.BalancePolicy{MaxMovesInFlight: su.MaxMovesInFlight, Load: su.Load.policy(), Standbys: su.Standbys}
		if _, err := r.coord.Fleet().SetPolicy(context.Background(), p, false); err != nil {
			c.violate("storing the policy %v: %v", p, err)
		}
	}
	for i := range su.Workers {
		r.spawn(fmt.Sprintf("w%d", i))
	}
	res := Result{Schedule: sched, Bound: Bound(su)}
	for _, e := range sched.Events {
		if !r.advanceTo(e.At) {
			break
		}
		r.apply(e)
	}
	if c.count() == 0 && r.advanceTo(sched.FaultsEnd) {
		res.Settle = r.settle(sched.FaultsEnd, res.Bound)
	}
	r.shutdown()
	stopWatch()
	<-watched
	checkHistory(context.Background(), r.store, c)
	r.runs.final(c.elapsed())

	res.Simulated = c.elapsed()
	res.Faults = r.faults
	counts := r.store.Counts()
	res.Commits, res.StaleRejected, res.Fences = counts.Commits, counts.StaleRejected, counts.Fences
	res.Starts, res.LostEnds, res.Overlaps = r.handlers.starts.Load(), r.handlers.lostEnds.Load(), r.handlers.overlaps.Load()
	res.RunOverlaps = r.runs.overlapsExcused()
	res.AssignorFaults = r.assignorFaults
	res.Elections, res.Contested = r.elect.contested()
	res.StaleServed = r.staleServed.Load()
	res.WarmStarts = r.warmStarts.Load()
	res.DrainedLeaves = r.drainedLeaves.Load()
	res.Load = r.loadRes
	res.Reshard = r.finishReshards()
	res.AssignsAccepted, res.AssignsRefused, res.HeldSent, res.HeldRefused = r.elect.counts()
	res.Violations = c.list()
	return res
}

// jumpExcuses reports whether an overlap with the run of claim older, at
// at, is the by-design effect of a coordinator clock jump: one happened
// within a TTL before, and older's worker was still within its local
// deadline.
func (r *run) jumpExcuses(older shard.Claim, at time.Duration) bool {
	t := r.c.start.Add(at)
	if !r.jumps.since(t.Add(-r.jumps.window)) {
		return false
	}
	_, deadline, ok := r.leases.deadline(older)
	return ok && t.Before(deadline)
}

func (r *run) tracef(format string, args ...any) {
	if r.opts.Trace != nil {
		r.opts.Trace(fmt.Sprintf(format, args...))
	}
}

// advanceTo lets simulated time pass until at (since the start), checking
// the workers every checkEvery. It reports false once a violation is found:
// the run stops early, so the report shows the first problem near its cause.
func (r *run) advanceTo(at time.Duration) bool {
	for {
		r.checkWorkers()
		if r.c.count() > 0 {
			return false
		}
		left := at - r.c.elapsed()
		if left <= 0 {
			return true
		}
		time.Sleep(min(left, checkEvery))
	}
}

// checkWorkers collects the result of every worker whose Run returned: a
// worker stops only when told to (leave, crash), and then with nil.
func (r *run) checkWorkers() {
	for _, m := range r.fleet.All() {
		if m.Ext.checked {
			continue
		}
		select {
		case <-m.Done():
			m.Ext.checked = true
			if err := m.Err(); err != nil {
				r.c.violate("worker %s stopped with an error: %v", m.ID, err)
			} else if m.Running() {
				r.c.violate("worker %s stopped without being told to", m.ID)
			}
		default:
		}
	}
}

// running returns the members that should be running now: started, not
// crashed, not left.
func (r *run) running() []*member {
	out := r.fleet.Running()
	slices.SortFunc(out, func(a, b *member) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// shutdown heals everything, stops every worker gracefully, lets crashed
// workers' frozen handlers return, and waits for all of it.
func (r *run) shutdown() {
	all := r.fleet.All()
	for _, m := range all {
		m.Ext.view.disarm()
		if !m.Crashed() {
			m.Ext.slow.set(0, false)
			m.Ext.slowMax.Store(0)
		}
	}
	r.fleet.StopAll() // heals the rest, and lets crashed workers' handlers see Crashed and return without writing
	for _, m := range all {
		if !m.Ext.checked {
			m.Ext.checked = true
			if err := m.Err(); err != nil {
				r.c.violate("worker %s: Run returned %v on shutdown", m.ID, err)
			}
		}
	}
	// Runners still on their way out may call a handler once more; wait
	// until none is running, so the final audit sees every commit.
	deadline := r.c.elapsed() + time.Minute
	for r.handlers.active.Load() > 0 {
		if r.c.elapsed() > deadline {
			r.c.violate("%d handlers still running a minute after every worker stopped", r.handlers.active.Load())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
