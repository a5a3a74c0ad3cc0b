package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// pick is one planned fault with its victims.
type pick struct {
	kind    Kind
	worker  *Worker // a worker fault's victim
	agent   *Agent  // an agent fault's victim
	victims []*Worker
	jitter  time.Duration // per-fault randomness: a hold, a downtime, a delay
	slot    int           // its index in the plan
	// sessions are a destroy's victim's sessions, found by inject.
	sessions sessionsOf
	// holder is P/assignor as read just before an assignor fault.
	holder Holder
	// err: the fault could not start (no assignor to hit, or no reading
	// of P/assignor); inject records it as failed.
	err error
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
	// assignor names the worker holding P/assignor ("" when free);
	// blocked is since when an assignor fault has waited for it.
	assignor func() string
	blocked  time.Time
}

// next waits until a planned fault can start, takes it and returns it;
// false when the plan is done or ctx ended.
func (s *scheduler) next(ctx context.Context, rng *rand.Rand) (pick, bool) {
	for {
		p, ok, done := s.try(rng, time.Now())
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
// agent fault that cannot start reserves its agent and ends the scan; an
// assignor fault that cannot start is passed over until assignorWait.
func (s *scheduler) try(rng *rand.Rand, now time.Time) (p pick, ok, done bool) {
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
		} else if k.assignor() {
			w, why := s.assignorFor()
			if w == nil && s.blocked.IsZero() {
				s.blocked = now
			}
			if w == nil && now.Sub(s.blocked) < assignorWait {
				continue
			}
			s.blocked = time.Time{}
			p = pick{kind: k, worker: w}
			if w == nil {
				p.err = fmt.Errorf("chaos: no assignor to hit within %v: %s", assignorWait, why)
			} else {
				p.victims = []*Worker{w}
			}
		} else {
			w := s.workerFor()
			if w == nil || s.down+1 > s.lim.MaxDown {
				continue
			}
			p = pick{kind: k, worker: w, victims: []*Worker{w}}
		}
		p.slot = i
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
		if s.busy[w] || s.agents[w.Agent] || s.reserved != nil && s.reserved == w.Agent {
			continue
		}
		if best == nil || s.healed[w].Before(s.healed[best]) {
			best = w
		}
	}
	return best
}

// assignorWait bounds how long an assignor fault waits for the assignor
// to be free to hit (a fault's length and its settling, several times):
// longer means the fleet has no assignor, which the run must report.
const assignorWait = 2 * time.Minute

// assignorFor is the worker holding P/assignor if a fault may hit it now
// (idle, its agent free, MaxDown not reached), else nil and why not.
func (s *scheduler) assignorFor() (*Worker, string) {
	id := s.assignor()
	if id == "" {
		return nil, "P/assignor held by no one"
	}
	i := slices.IndexFunc(s.f.Workers, func(w *Worker) bool { return w.ID == id })
	if i < 0 {
		return nil, fmt.Sprintf("P/assignor names %q, no worker of the fleet", id)
	}
	w := s.f.Workers[i]
	switch {
	case s.busy[w]:
		return nil, "the assignor " + id + " is under another fault"
	case s.agents[w.Agent] || s.reserved != nil && s.reserved == w.Agent:
		return nil, "the assignor " + id + "'s agent is under or waiting for an agent fault"
	case s.down+1 > s.lim.MaxDown:
		return nil, fmt.Sprintf("%d workers down already", s.down)
	}
	return w, ""
}

// undo puts a taken fault back in the plan, its victims idle as before.
func (s *scheduler) undo(p pick) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken[p.slot] = false
	s.left++
	for _, v := range p.victims {
		s.busy[v] = false
	}
	s.down -= len(p.victims)
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
