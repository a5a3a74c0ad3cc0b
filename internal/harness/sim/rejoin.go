package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// rejoinShare is the chance that the rejoin stream adds a restart with a
// grace in the gap after a step of the main generator: about one a seed.
const rejoinShare = 0.08

// addRejoins lays Rejoin faults over a generated schedule, from a random
// stream of their own, as addDestroys does and for the same reason: every
// event seeds had before stays where it was. A rejoin stops a running
// worker gracefully with a rejoin grace of Size (1 s to 6 s) and starts it
// again under the same ID For later: inside the grace two times in three,
// past it otherwise. Half of them also crash another running worker inside
// the grace, for good: its shards must fail over while the returning
// worker's stay kept for it. The crash strikes a worker with no later
// event, so that every event of the schedule still finds its worker.
//
// The returning worker has no other event of any stream from just before
// the stop to just after its return, and no assignor fault falls near that
// window (the schedule does not know whom those strike, and a worker that
// crashed as the assignor is restarted by the assignor stream). A crash
// needs three workers running throughout, so that two run at the end.
func (s *Schedule) addRejoins(steps []time.Duration, end time.Duration) {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x4e101ed5ace5ba11))
	draw := betweenIn(rng)
	between := func(lo, hi time.Duration) time.Duration { return draw(lo, hi).Round(time.Millisecond) }
	p := s.Setup.Policy
	margin := p.TTL + 2*p.EffectiveLockDelay() + 5*time.Second // an assignor fault's reach
	for i, at := range steps {
		next := gapEnd(steps, i, end)
		if rng.Float64() >= rejoinShare || next-at < 2*time.Millisecond {
			continue
		}
		t := min(at+time.Millisecond+between(0, next-at-time.Millisecond), next-time.Millisecond)
		e := Event{At: t, Kind: Rejoin, Size: between(time.Second, 6*time.Second)}
		if rng.IntN(3) < 2 {
			e.For = between(200*time.Millisecond, e.Size-100*time.Millisecond)
		} else {
			e.For = e.Size + between(200*time.Millisecond, 3*time.Second)
		}
		crash := rng.IntN(2) == 0
		crashAt := t + between(time.Millisecond, min(e.For, e.Size))
		if slices.ContainsFunc(s.Events, func(x Event) bool {
			return x.Assignor && x.At+x.For+x.Size >= t-margin && x.At <= t+e.For+margin
		}) {
			continue
		}
		var victims []string
		for _, id := range s.runningAt(t) {
			if !s.busy(id, t-time.Millisecond, t+e.For+time.Millisecond) {
				victims = append(victims, id)
			}
		}
		if len(victims) == 0 {
			continue
		}
		e.Worker = victims[rng.IntN(len(victims))]
		s.Events = append(s.Events, e, Event{At: t + e.For, Kind: Rejoin, Worker: e.Worker, Heal: true})
		s.FaultsEnd = max(s.FaultsEnd, t+max(e.For, e.Size))
		if !crash || s.minRunning(t, s.FaultsEnd+time.Hour) < 3 {
			continue
		}
		var others []string
		for _, id := range s.runningAt(crashAt) {
			if id != e.Worker && !s.busy(id, crashAt, time.Duration(math.MaxInt64)) {
				others = append(others, id)
			}
		}
		if len(others) > 0 {
			s.Events = append(s.Events, Event{At: crashAt, Kind: Crash, Worker: others[rng.IntN(len(others))]})
			s.FaultsEnd = max(s.FaultsEnd, crashAt)
		}
	}
}

// busy reports whether any event of worker id falls in [from, to], or any
// fault of its with a duration overlaps it.
func (s *Schedule) busy(id string, from, to time.Duration) bool {
	return slices.ContainsFunc(s.Events, func(x Event) bool {
		return x.Worker == id && x.At <= to && x.At+x.For >= from
	})
}

// rejoinGrace is the rejoin grace a process of worker id started at now
// runs with: the Size of the schedule's next Rejoin of id, if that comes
// before any other end of the process (a crash or a leave); else none, so
// that every other stop hands off at once as before.
func (s Schedule) rejoinGrace(id string, now time.Duration) time.Duration {
	for _, e := range s.Events {
		if e.Worker != id || e.Heal || e.At < now {
			continue
		}
		switch e.Kind {
		case Rejoin:
			return e.Size
		case Crash, Leave:
			return 0
		}
	}
	return 0
}

// drainBeforeStop is worker id's worker.Config.DrainBeforeStop for the
// process started at now: in half the seeds whose handlers have a standby
// side (a stream of its own, so that no schedule changes), a worker whose
// process ends next with a Leave drains first, so that its shards move
// warm; none before a Rejoin (a grace keeps the shards instead) or a crash.
func (s Schedule) drainBeforeStop(id string, now time.Duration) time.Duration {
	if !s.Setup.Warm || rand.New(rand.NewPCG(s.Seed, 0xd5a1)).IntN(2) == 0 {
		return 0
	}
	for _, e := range s.Events {
		if e.Worker != id || e.Heal || e.At < now {
			continue
		}
		switch e.Kind {
		case Leave:
			return 20 * time.Second
		case Crash, Rejoin:
			return 0
		}
	}
	return 0
}

// rejoin plays a Rejoin: the stop with a grace, or, on its heal, the start
// under the same ID, if the stop was played.
func (r *run) rejoin(m *member, e Event) {
	if !e.Heal {
		_, keyed := r.snapshot().Assignments[m.ID]
		r.rejoining[m.ID] = keyed
		m.Leave()
		r.tracef("  %s stops with a rejoin grace of %v", m.ID, e.Size)
		return
	}
	keyed, stopped := r.rejoining[e.Worker]
	if !stopped {
		r.tracef("  %s did not stop for a rejoin: nothing to start", e.Worker)
		return
	}
	delete(r.rejoining, e.Worker)
	snap := r.snapshot()
	if mk, ok := snap.Member(e.Worker); ok && !mk.Live() && mk.Returning(time.Now()) {
		// Inside its grace: the assignor must have kept its key.
		if _, ok := snap.Assignments[e.Worker]; keyed && !ok {
			r.c.violate("%s returns inside its rejoin grace (until %v) but its assignment key was deleted", e.Worker, mk.RejoinUntil)
		}
	}
	r.spawn(e.Worker)
}

func (e Event) rejoinString() string {
	return fmt.Sprintf(" down for %v with a rejoin grace of %v", e.For, e.Size)
}
