package chaos

import (
	"context"
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

	LeaderKill Kind = "leader-kill" // the Raft leader SIGKILLed, then restarted
)

// WorkerKinds are the faults injected into one worker; AgentKinds those
// injected into one client agent, which hit every worker that talks to it.
var (
	WorkerKinds = []Kind{SigStop, Kill9, Partition, SlowRenew, FailRenew, Destroy, PartitionDestroy}
	AgentKinds  = []Kind{AgentKill, AgentStop, AgentLeave}
)

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

// RunFaults injects perKind faults of each of WorkerKinds and AgentKinds,
// in a random order, at most lim.Lanes at once, never two on one worker,
// and returns them in the order they started. A fault's victims are left
// alone for tm.Settle after it healed. It stops early, returning what was
// injected, when ctx ends.
//
// A victim is picked among the idle workers (or agents whose workers are
// all idle) as the one that recovered longest ago: it has had the most
// time to win shards back, so the fault has something to take. An agent
// fault that cannot start yet (its workers busy, or too many down) holds
// back the faults planned after it, and keeps new worker faults off its
// workers, so that it is not starved.
func (f *Fleet) RunFaults(ctx context.Context, perKind int, lim Limits, seed uint64, tm Timing) []Fault {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var plan []Kind
	for range perKind {
		plan = append(plan, WorkerKinds...)
		plan = append(plan, AgentKinds...)
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	lim.Lanes = max(1, lim.Lanes)
	lim.MaxDown = max(1, min(lim.MaxDown, len(f.Workers)-1))
	s := &scheduler{f: f, plan: plan, taken: make([]bool, len(plan)), left: len(plan), lim: lim,
		busy: map[*Worker]bool{}, healed: map[*Worker]time.Time{}, agents: map[*Agent]bool{}}

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
	return faults
}

// pick is one planned fault with its victims.
type pick struct {
	kind    Kind
	worker  *Worker // a worker fault's victim
	agent   *Agent  // an agent fault's victim
	victims []*Worker
	jitter  time.Duration // per-fault randomness: a hold, a downtime, a delay
	// sessions are a destroy's victim's sessions, found by inject.
	sessions sessionsOf
}

// scheduler hands the lanes their next fault.
type scheduler struct {
	f   *Fleet
	lim Limits

	mu       sync.Mutex // guards the rest, and the rng passed to try
	plan     []Kind
	taken    []bool
	left     int // plan entries not taken
	busy     map[*Worker]bool
	healed   map[*Worker]time.Time
	agents   map[*Agent]bool // agents under a fault
	reserved *Agent          // the agent the next blocked agent fault waits for
	down     int
}

// next waits until a planned fault can start, takes it and returns it;
// false when the plan is done or ctx ended.
func (s *scheduler) next(ctx context.Context, rng *rand.Rand) (pick, bool) {
	for {
		p, ok, done := s.try(rng)
		if ok || done {
			return p, ok
		}
		if ctx.Err() != nil {
			return pick{}, false
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// try takes the first planned fault that can start now, in plan order; an
// agent fault that cannot start reserves its agent and ends the scan.
func (s *scheduler) try(rng *rand.Rand) (p pick, ok, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left == 0 {
		return pick{}, false, true
	}
	for i, k := range s.plan {
		if s.taken[i] {
			continue
		}
		if slices.Contains(AgentKinds, k) {
			a := s.agentFor()
			if a == nil || s.down+len(a.Workers) > s.lim.MaxDown || s.anyBusy(a.Workers) {
				if a != nil && s.reserved == nil {
					s.reserved = a
				}
				return pick{}, false, false
			}
			if s.reserved == a {
				s.reserved = nil
			}
			s.agents[a] = true
			p = pick{kind: k, agent: a, victims: a.Workers}
		} else {
			w := s.workerFor()
			if w == nil || s.down+1 > s.lim.MaxDown {
				continue
			}
			p = pick{kind: k, worker: w, victims: []*Worker{w}}
		}
		s.taken[i] = true
		s.left--
		for _, v := range p.victims {
			s.busy[v] = true
		}
		s.down += len(p.victims)
		p.jitter = time.Duration(rng.Int64N(int64(2 * time.Second)))
		return p, true, false
	}
	return pick{}, false, false
}

// agentFor is the agent an agent fault should hit: the reserved one, else
// the one not under a fault with the fewest busy workers, the one whose
// workers recovered longest ago among those.
func (s *scheduler) agentFor() *Agent {
	if s.reserved != nil {
		return s.reserved
	}
	var best *Agent
	bestBusy := 0
	for _, a := range s.f.Agents {
		if s.agents[a] {
			continue
		}
		n := 0
		for _, w := range a.Workers {
			if s.busy[w] {
				n++
			}
		}
		if best == nil || n < bestBusy || (n == bestBusy && s.lastHealed(a).Before(s.lastHealed(best))) {
			best, bestBusy = a, n
		}
	}
	return best
}

func (s *scheduler) lastHealed(a *Agent) time.Time {
	var t time.Time
	for _, w := range a.Workers {
		if s.healed[w].After(t) {
			t = s.healed[w]
		}
	}
	return t
}

func (s *scheduler) anyBusy(ws []*Worker) bool {
	return slices.ContainsFunc(ws, func(w *Worker) bool { return s.busy[w] })
}

// workerFor is the idle worker, not on an agent under or reserved for an
// agent fault, that recovered longest ago.
func (s *scheduler) workerFor() *Worker {
	var best *Worker
	for _, w := range s.f.Workers {
		if s.busy[w] || s.agents[w.Agent] || s.reserved == w.Agent {
			continue
		}
		if best == nil || s.healed[w].Before(s.healed[best]) {
			best = w
		}
	}
	return best
}

// done frees a fault's victims once it healed and they settled.
func (s *scheduler) done(p pick) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, v := range p.victims {
		s.busy[v] = false
		s.healed[v] = now
	}
	s.down -= len(p.victims)
	if p.agent != nil {
		delete(s.agents, p.agent)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}
