package sim

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/internal/inproc"
)

// addDestroys lays Destroy faults over a generated schedule, from a random
// stream of their own: after each step of the main generator (struck at
// steps, the last step's gap ending at end), with the probability
// Destroy's weight would give it among the other kinds, a destroy falls at
// a random moment before the next step. Drawing them apart leaves every
// other event of a seed where it was, so seeds that found bugs before
// destroys existed still play their faults at the same moments.
//
// The victim is a worker that runs at that moment and is neither paused
// nor cut off. Half the destroys also cut it off (calls hang) for one
// renewal interval up to 3·TTL, like PartitionHang; their victim must be
// free of pauses, partitions and other cuts for the whole cut, and must
// not leave during it, so that no heal of another fault ends the cut early
// or the cut's heal ends another fault.
func (s *Schedule) addDestroys(steps []time.Duration, end time.Duration) {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0xde57c0de5e55104e))
	between := betweenIn(rng)
	var others float64
	for k, w := range weights {
		if k != Destroy {
			others += w
		}
	}
	share := weights[Destroy] / others
	p := s.Setup.Policy
	main := len(s.Events)
	for i, at := range steps {
		next := gapEnd(steps, i, end)
		if rng.Float64() >= share || next-at < 2*time.Millisecond {
			continue
		}
		t := at + time.Millisecond + between(0, next-at-time.Millisecond).Round(time.Millisecond)
		if t >= next {
			t = next - time.Millisecond
		}
		e := Event{At: t, Kind: Destroy}
		if rng.IntN(2) == 0 {
			e.For = between(p.RenewEvery, 3*p.TTL).Round(time.Millisecond)
		}
		victims := s.destroyable(s.Events[:main], e)
		if len(victims) == 0 {
			continue
		}
		e.Worker = victims[rng.IntN(len(victims))]
		s.Events = append(s.Events, e)
		s.FaultsEnd = max(s.FaultsEnd, t)
		if e.For > 0 {
			s.Events = append(s.Events, Event{At: t + e.For, Kind: Destroy, Worker: e.Worker, Heal: true})
			// As for a partition: it may step down at its local deadline,
			// up to StepDownAfter after the heal.
			s.FaultsEnd = max(s.FaultsEnd, t+e.For+p.StepDownAfter())
		}
	}
}

// destroyable lists, in order of first start, the workers that e (a
// Destroy, its worker not yet chosen) may strike, given the main events
// and the destroys chosen so far (s.Events).
func (s *Schedule) destroyable(main []Event, e Event) []string {
	// (Heals follow their fault in main, so it is not in time order; the
	// membership events are.)
	order, running := s.membership(main, e.At)
	blocked := map[string]bool{}
	for _, x := range s.Events {
		if x.Heal {
			continue
		}
		switch {
		case x.Kind == Pause || x.Kind == PartitionFail || x.Kind == PartitionHang || x.Kind == Destroy && x.For > 0:
			// Its window [At, At+For) must not hold e's moment, nor
			// touch e's own cut.
			if x.At <= e.At && e.At < x.At+x.For || e.For > 0 && x.At <= e.At+e.For && e.At <= x.At+x.For {
				blocked[x.Worker] = true
			}
		case x.Kind == Leave:
			if e.For > 0 && e.At <= x.At && x.At <= e.At+e.For {
				blocked[x.Worker] = true
			}
		}
	}
	var out []string
	for _, id := range order {
		if running[id] && !blocked[id] {
			out = append(out, id)
		}
	}
	return out
}

// destroy plays a Destroy on m: with e.For set it first cuts m off (its
// calls hang until the heal), then ends m's latest session on the
// coordinator as an operator would.
func (r *run) destroy(m *member, e Event) {
	if e.For > 0 {
		m.Hold(holdKey(e), inproc.Hold{Mode: faults.Hang})
	}
	sid := m.Ext.session()
	if sid == "" {
		r.tracef("  %s has no session yet: nothing to destroy", m.ID)
		return
	}
	r.elect.destroy(sid)
	_ = r.coord.Sessions().Destroy(context.Background(), sid) // the embedded coordinator fails no other way
	r.tracef("  destroyed %s's session %s", m.ID, sid)
}

// betweenIn returns a draw from rng of a duration in [lo, hi) (lo when the
// range is empty).
func betweenIn(rng *rand.Rand) func(lo, hi time.Duration) time.Duration {
	return func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
}

// gapEnd is when the gap after step i of the main generator ends: at the
// next step, or for the last one at end.
func gapEnd(steps []time.Duration, i int, end time.Duration) time.Duration {
	if i+1 < len(steps) {
		return steps[i+1]
	}
	return end
}
