package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds.
const (
	SigStop   Kind = "sigstop"          // SIGSTOP past the TTL and the lock-delay, then SIGCONT
	Kill9     Kind = "kill-9"           // SIGKILL, then a restart under the same ID
	Partition Kind = "partition"        // cut off from Consul, not from PostgreSQL
	SlowRenew Kind = "slow-renewals"    // latency on the renewal calls
	FailRenew Kind = "failing-renewals" // HTTP 500 on the renewal calls
	// Destroy: a third party (the harness, through a server) destroys the
	// worker's session while the worker can reach Consul.
	Destroy Kind = "destroy"
	// PartitionDestroy: the worker is cut off from Consul, then its session
	// is destroyed, then the cut heals: the worker cannot hear of the end,
	// which the lock-delay rule covers.
	PartitionDestroy Kind = "partition+destroy"

	// AgentKill: the client agent of several workers SIGKILLed, restarted
	// later. Serf marks its node failed, which ends the sessions on it,
	// while its workers cannot reach Consul.
	AgentKill Kind = "agent-kill"
	// AgentStop: the client agent SIGSTOPped past the TTL, then continued;
	// its workers keep running, cut off.
	AgentStop Kind = "agent-stop"
	// AgentLeave: `consul leave` on the client agent (its node leaves at
	// once, ending its sessions), restarted later.
	AgentLeave Kind = "agent-leave"
	// ZoneKill: every worker of one zone SIGKILLed at once, then restarted
	// under their IDs (a zone is a client agent's workers: each runs with
	// --zone its agent's name), so its shards move to the other zones.
	ZoneKill Kind = "zone-kill-9"

	// AssignorKill9 and AssignorStop are Kill9 and SigStop on whichever
	// worker holds P/assignor when the fault starts: the
	// assignor's session ends with its worker, and another must be elected.
	AssignorKill9 Kind = "assignor-kill-9"
	AssignorStop  Kind = "assignor-sigstop"

	LeaderKill Kind = "leader-kill" // the Raft leader SIGKILLed, then restarted
)

// WorkerKinds are the faults injected into one worker; AssignorKinds
// those injected into the worker that is the assignor; AgentKinds those
// injected into one client agent, which hit every worker that talks to it.
var (
	WorkerKinds   = []Kind{SigStop, Kill9, Partition, SlowRenew, FailRenew, Destroy, PartitionDestroy}
	AssignorKinds = []Kind{AssignorKill9, AssignorStop}
	AgentKinds    = []Kind{AgentKill, AgentStop, AgentLeave, ZoneKill}
)

// stops: the fault SIGSTOPs its victim (Pauses). kills: it SIGKILLs it.
// Either way the victim stops processing at the fault (TakeoverOf).
func (k Kind) stops() bool { return k == SigStop || k == AssignorStop }
func (k Kind) kills() bool { return k == Kill9 || k == AssignorKill9 }

// assignor: the fault's victim is the worker holding P/assignor.
func (k Kind) assignor() bool { return slices.Contains(AssignorKinds, k) }

// Timing is how long faults last, from the lease.
type Timing struct {
	// TTL is the workers' session TTL: a pause, partition or failing
	// renewals last past it, so the session is lost.
	TTL time.Duration
	// LockDelay is the sessions' lock-delay. A SIGSTOP lasts past TTL +
	// LockDelay, so that in most pauses a newer owner starts while the
	// victim is stopped.
	LockDelay time.Duration
	// Settle is how long a worker is left alone after a fault healed
	// before it can be picked again.
	Settle time.Duration
}

// Limits bound how many faults run at once.
type Limits struct {
	// Lanes is how many faults run at once at most.
	Lanes int
	// MaxDown is how many workers faults may hit at once (an agent fault
	// hits every worker of its agent), so that some are always left to
	// take the victims' shards over.
	MaxDown int
}

// RunFaults injects perKind faults of each of WorkerKinds, AssignorKinds
// and AgentKinds, in a random order, at most lim.Lanes at once, never two
// on one worker, and returns them in the order they started. A fault's
// victims are left alone for tm.Settle after it healed. It stops early,
// returning what was injected, when ctx ends.
//
// A victim is picked among the idle workers (or agents whose workers are
// all idle) as the one that recovered longest ago: it has had the most
// time to win shards back, so the fault has something to take. An agent
// fault that cannot start yet (its workers busy, or too many down) holds
// back the faults planned after it, and keeps new worker faults off its
// workers, so that it is not starved. An assignor fault's victim is the
// worker holding P/assignor (followed by a watch, confirmed by a read just
// before the fault); while it cannot be hit, the fault waits and later
// ones go first, up to assignorWait, after which it is recorded as failed.
// RunFaults then waits (up to electWithin) for a new assignor after each.
func (f *Fleet) RunFaults(ctx context.Context, perKind int, lim Limits, seed uint64, tm Timing) []Fault {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var plan []Kind
	for range perKind {
		plan = append(plan, f.kinds()...)
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	lim.Lanes = max(1, lim.Lanes)
	lim.MaxDown = max(1, min(lim.MaxDown, len(f.Workers)-1))
	wctx, stopWatch := context.WithCancel(ctx)
	aw, watched, err := f.watchAssignor(wctx)
	if err != nil {
		stopWatch()
		return []Fault{{Kind: AssignorKill9, Start: time.Now(), End: time.Now(), Err: err.Error()}}
	}
	defer func() { stopWatch(); <-watched }()
	s := newScheduler(f, plan, lim, aw.current)

	var mu sync.Mutex // guards faults
	var faults []Fault
	var wg sync.WaitGroup
	for lane := range lim.Lanes {
		wg.Go(func() {
			// Staggered, so the lanes' faults do not start in step.
			sleepCtx(ctx, time.Duration(lane)*(tm.TTL+tm.Settle)/time.Duration(lim.Lanes))
			for {
				p, ok := s.next(ctx, rng)
				if !ok {
					return
				}
				if p.worker != nil && p.kind.assignor() {
					p.holder, p.err = aw.confirm(ctx, p.worker.ID)
					if errors.Is(p.err, errMoved) {
						s.undo(p) // not the assignor any more: pick again
						sleepCtx(ctx, 50*time.Millisecond)
						continue
					}
				}
				ft := f.inject(ctx, p, tm)
				sleepCtx(ctx, tm.Settle)
				s.done(p)
				mu.Lock()
				faults = append(faults, ft)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sortFaults(faults)
	aw.awaitElections(ctx, faults)
	return faults
}

func newScheduler(f *Fleet, plan []Kind, lim Limits, assignor func() string) *scheduler {
	return &scheduler{f: f, plan: plan, taken: make([]bool, len(plan)), left: len(plan), lim: lim, assignor: assignor,
		busy: map[*Worker]bool{}, healed: map[*Worker]time.Time{}, agents: map[*Agent]bool{}}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}
