package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shardlease/shardlease/worker"
)

// assignorShare is the chance that the assignor stream adds a fault in the
// gap after a step of the main generator. About 14 steps make a seed, so
// most seeds get two or three.
const assignorShare = 0.2

// assignorWeights are the kinds the assignor stream draws, and how often.
var assignorWeights = []struct {
	kind   Kind
	weight float64
}{{Crash, 2}, {Pause, 2}, {Destroy, 1.5}, {StaleAssignment, 2}}

// addAssignorFaults lays the faults that aim at the assignor's role over a
// generated schedule, from a random stream of their own, as
// addDestroys does and for the same reason: every event seeds had before
// stays where it was. After each step of the main generator (struck at
// steps, the last step's gap ending at end), with probability
// assignorShare, one fault falls at a random moment before the next step,
// once the stream's previous fault is over (they never overlap):
//
//   - Crash of the assignor, then a Restart of the worker it struck within
//     TTL + 1.25·lock-delay + 1 s, and half the time a Join of a new worker
//     from TTL on: the newcomer, the restarted worker and the survivors
//     campaign while P/assignor comes out of its lock-delay. The restart
//     keeps the schedule's own count of running workers exact, though it
//     does not know who crashed. It needs two running workers throughout.
//   - Pause of the assignor: armed for Size, it freezes the worker on its
//     next Assign, the write in hand, or at Size anyway; it lasts until
//     For, at least TTL + 0.5 s after it froze, so the write it sends on
//     waking comes after its session ended and must be refused.
//   - Destroy of the assignor's session, half of them cutting it off.
//   - StaleAssignment of a running worker, for up to StuckAfter, its
//     answers up to StuckAfter/3 late: a change that lands while an
//     answer is held reaches the worker up to two lags later, and a worker
//     that has not taken its free shards within StuckAfter is judged stuck
//     and given nothing until its verdict ends 2·StuckAfter later and it
//     takes the one shard of its probation (docs/design.md), which the
//     settle bound does not cover; lags are kept to a third of the fault so
//     that a healthy worker is not judged that way (docs/reliability.md).
func (s *Schedule) addAssignorFaults(steps []time.Duration, end time.Duration) {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0xa55e1c0a55e1c0de))
	draw := betweenIn(rng)
	between := func(lo, hi time.Duration) time.Duration { return draw(lo, hi).Round(time.Millisecond) }
	p := s.Setup.Policy
	ld := p.EffectiveLockDelay()
	var total float64
	for _, w := range assignorWeights {
		total += w.weight
	}
	var free time.Duration // the stream's last fault is over
	nextID := len(s.startOrder())
	for i, at := range steps {
		next := gapEnd(steps, i, end)
		if rng.Float64() >= assignorShare || next-at < 2*time.Millisecond {
			continue
		}
		t := min(at+time.Millisecond+between(0, next-at-time.Millisecond), next-time.Millisecond)
		k := assignorWeights[len(assignorWeights)-1].kind
		r := rng.Float64() * total
		for _, w := range assignorWeights {
			if r < w.weight {
				k = w.kind
				break
			}
			r -= w.weight
		}
		if t < free {
			continue
		}
		e := Event{At: t, Kind: k, Assignor: true}
		var last time.Duration // when its last event falls
		settle := p.StepDownAfter()
		switch k {
		case Crash:
			restart := t + between(0, p.TTL+ld*5/4+time.Second)
			if s.minRunning(t, restart) < 2 {
				continue
			}
			s.Events = append(s.Events, e, Event{At: restart, Kind: Restart, Assignor: true})
			last = restart
			if join := t + between(p.TTL, p.TTL+ld*5/4+time.Second); rng.IntN(2) == 0 && s.maxRunning(join) < s.Setup.MaxWorkers {
				s.Events = append(s.Events, Event{At: join, Kind: Join, Worker: fmt.Sprintf("w%d", nextID)})
				nextID++
				last = max(last, join)
			}
			settle = 0
		case Pause:
			e.Size = between(time.Second, 4*time.Second)
			e.For = e.Size + p.TTL + between(500*time.Millisecond, ld+time.Second)
		case Destroy:
			if rng.IntN(2) == 0 {
				e.For = between(p.RenewEvery, 3*p.TTL)
			}
		case StaleAssignment:
			running := s.runningAt(t)
			if len(running) == 0 {
				continue
			}
			e.Assignor, e.Worker = false, running[rng.IntN(len(running))]
			e.For = between(p.RenewEvery, stuckAfter(s.Setup))
			e.Size = between(10*time.Millisecond, min(e.For, stuckAfter(s.Setup)/3))
			e.Replay = rng.IntN(2) == 0
			settle = e.Size // an answer held at the heal comes that late
		}
		if k != Crash {
			s.Events = append(s.Events, e)
			last = t
		}
		if e.For > 0 {
			h := e
			h.At, h.Heal, h.For, h.Size, h.Replay = t+e.For, true, 0, 0, false
			s.Events = append(s.Events, h)
			last = h.At
		}
		free = last + time.Millisecond
		s.FaultsEnd = max(s.FaultsEnd, last+settle)
	}
}

// runningAt lists the workers the schedule has running just before t, in
// order of first start. Assignor faults are left out: the schedule does
// not know whom they strike, and each crash of the assignor is undone by
// its restart.
func (s *Schedule) runningAt(t time.Duration) []string {
	order, running := s.membership(s.Events, t)
	var out []string
	for _, id := range order {
		if running[id] {
			out = append(out, id)
		}
	}
	return out
}

// startOrder lists every worker ID the schedule starts.
func (s *Schedule) startOrder() []string {
	order, _ := s.membership(s.Events, math.MaxInt64)
	return order
}

// minRunning is the fewest workers the schedule has running from t to u;
// maxRunning the most from t on.
func (s *Schedule) minRunning(t, u time.Duration) int {
	n := len(s.runningAt(t + 1))
	for _, e := range s.Events {
		if t <= e.At && e.At <= u {
			n = min(n, len(s.runningAt(e.At+1)))
		}
	}
	return n
}

func (s *Schedule) maxRunning(t time.Duration) int {
	n := len(s.runningAt(t + 1))
	for _, e := range s.Events {
		if e.At >= t {
			n = max(n, len(s.runningAt(e.At+1)))
		}
	}
	return n
}

// stuckAfter is the assignor's StuckAfter for su's policy, as the worker
// sets it (worker.Config.EffectiveStuckAfter).
func stuckAfter(su Setup) time.Duration {
	return worker.Config{Policy: su.Policy}.EffectiveStuckAfter()
}
