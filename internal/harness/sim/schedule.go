package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Setup is the fleet a seed runs: its size, lease policy and worker
// settings.
type Setup struct {
	Workers    int // initial workers
	MaxWorkers int // joins stop at this many running workers
	Shards     int
	Policy     shard.LeasePolicy
	// MaxMovesInFlight is the assignor's cap on hand-offs in flight (0:
	// rebalance's default).
	MaxMovesInFlight int
	DrainTimeout     time.Duration
	// Load is the seed's load balancing (count balance when off).
	Load LoadSetup
	// Zones is how many zones the workers are spread over (0: none);
	// worker w's zone is ZoneOf(w).
	Zones int
	// Warm gives the handlers a standby side (warm moves), and Standbys
	// is the fleet's standbys for failover per shard (P/policy).
	Warm     bool
	Standbys int
	// MostShards is the largest shard count a reshard of the seed goes
	// to, 0 when it reshards nothing (see addReshards).
	MostShards int
}

// ZoneOf is the zone of worker id in a setup with zones: its number
// modulo Zones ("w4" of 3 zones is in zone-1), so a worker keeps its zone
// across restarts; "" without zones.
func (s Setup) ZoneOf(id string) string {
	if s.Zones == 0 {
		return ""
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "w"))
	return fmt.Sprintf("zone-%d", n%s.Zones)
}

func (s Setup) String() string {
	zones := ""
	if s.Zones > 0 {
		zones = fmt.Sprintf(", %d zones", s.Zones)
	}
	if s.Warm {
		zones += fmt.Sprintf(", standbys (%d for failover)", s.Standbys)
	}
	return fmt.Sprintf("%d workers (up to %d), %d shards%s, ttl %v renew %v pause budget %v, lock-delay %v, %d moves in flight, drain %v; %v",
		s.Workers, s.MaxWorkers, s.Shards, zones, s.Policy.TTL, s.Policy.RenewEvery, s.Policy.PauseBudget,
		s.Policy.EffectiveLockDelay(), s.MaxMovesInFlight, s.DrainTimeout, s.Load)
}

// policies are the lease policies seeds pick from. All satisfy the rule; the
// third sits exactly on it (2·500ms + 1s = 2s) and the last has no pause
// budget at all, so the local deadline coincides with the session's TTL.
var policies = []shard.LeasePolicy{
	{TTL: 2 * time.Second, RenewEvery: 400 * time.Millisecond, PauseBudget: time.Second},
	{TTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: 1500 * time.Millisecond},
	{TTL: 2 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second},
	{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second},
	{TTL: 2 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: 0},
}

// Schedule is everything a seed decides before the run starts: the fleet and
// the fault events, sorted by time. It is a pure function of the seed.
type Schedule struct {
	Seed   uint64
	Setup  Setup
	Events []Event
	// FaultsEnd is when the last fault and its after-effects are over: the
	// last heal or join, the slow handler steps and renewals still under
	// way at their heal, and the local deadline of a worker whose renewals
	// failed until a heal (it may step down at that deadline, up to
	// StepDownAfter after the heal). From then on the fleet must settle
	// within the bound.
	FaultsEnd time.Duration
	// ZoneOutage is the zone whose every running worker crashes at once
	// after the other faults (addZoneOutage), or "".
	ZoneOutage string
}

// Count returns how many faults of each kind the schedule injects (heals
// not counted).
func (s Schedule) Count() map[Kind]int {
	n := map[Kind]int{}
	for _, e := range s.Events {
		if !e.Heal {
			n[e.Kind]++
		}
	}
	return n
}

func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %v; faults end at %v\n", s.Seed, s.Setup, s.FaultsEnd)
	for _, e := range s.Events {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}

// weights of the kinds the generator picks from. Destroy is not drawn with
// the others but laid over their schedule afterwards (see addDestroys), at
// the rate its weight would give it among them.
var weights = map[Kind]float64{
	Crash: 2, Pause: 2, PartitionFail: 1.5, PartitionHang: 1.5, ClockJump: 1,
	Join: 1.5, Restart: 1, Leave: 1, SlowHandlers: 1.5, SlowRenewals: 1.5,
	Destroy: 1.5,
}

// genWorker is the generator's model of one worker ID.
type genWorker struct {
	id         string
	running    bool
	crashed    bool
	busyUntil  time.Duration // a pause or partition is in force until then
	slowHUntil time.Duration
	slowRUntil time.Duration
}

// NewSchedule derives a seed's fleet and fault schedule. The same seed always
// gives the same schedule: the generator keeps its own model of which
// workers run, so it never depends on how a run unfolds.
func NewSchedule(seed uint64) Schedule {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed5eed5eed5eed))
	between := betweenIn(rng)
	// Round to the millisecond, so schedules read well.
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

	p := policies[rng.IntN(len(policies))]
	// The lock-delay: exactly the step-down deadline (the least the rule
	// allows), half-way to the TTL, or the default, the TTL.
	p.LockDelay = []time.Duration{p.StepDownAfter(), (p.StepDownAfter() + p.TTL) / 2, 0}[rng.IntN(3)]
	su := Setup{
		Workers:          2 + rng.IntN(4),
		MaxWorkers:       6,
		Shards:           16 + rng.IntN(17),
		Policy:           p,
		MaxMovesInFlight: []int{1, 4, 0}[rng.IntN(3)],
		DrainTimeout:     2 * time.Second,
	}
	// Zones come from a stream of their own, so that the schedules of the
	// seeds before them (the regression list's) are unchanged: a third of
	// the seeds put their workers in 2 or 3 zones.
	if z := rand.New(rand.NewPCG(seed, 0x2035)).IntN(6); z >= 4 {
		su.Zones = z - 2
	}
	// Standbys likewise: half the seeds run handlers with a standby
	// side, half of those with one standby for failover per shard.
	if w := rand.New(rand.NewPCG(seed, 0x57a9)).IntN(4); w >= 2 {
		su.Warm, su.Standbys = true, w-2
	}
	s := Schedule{Seed: seed, Setup: su}

	var ws []*genWorker
	for i := range su.Workers {
		ws = append(ws, &genWorker{id: fmt.Sprintf("w%d", i), running: true})
	}
	pick := func(ok func(*genWorker) bool) *genWorker {
		var c []*genWorker
		for _, w := range ws {
			if ok(w) {
				c = append(c, w)
			}
		}
		if len(c) == 0 {
			return nil
		}
		return c[rng.IntN(len(c))]
	}
	running := func() int {
		n := 0
		for _, w := range ws {
			if w.running {
				n++
			}
		}
		return n
	}
	add := func(e Event) {
		s.Events = append(s.Events, e)
		end := e.At + e.For
		switch e.Kind {
		case SlowHandlers:
			end += e.Size // a slow step begun before the heal lasts its full length
		case SlowRenewals:
			// A renewal begun before the heal lasts its full length, and
			// the worker may still step down at its local deadline.
			end += e.Size + p.StepDownAfter()
		case Pause, PartitionFail, PartitionHang:
			// Renewals failed until the heal; if the next attempt comes
			// after the local deadline (at most StepDownAfter later), the
			// worker steps down then, after the heal.
			end += p.StepDownAfter()
		}
		s.FaultsEnd = max(s.FaultsEnd, end)
		if e.For > 0 {
			h := e
			h.At, h.Heal, h.For, h.Size, h.LateReply = e.At+e.For, true, 0, 0, false
			s.Events = append(s.Events, h)
		}
	}

	t := ms(between(time.Second, 10*time.Second))
	end := t + ms(between(30*time.Second, 90*time.Second))
	var steps []time.Duration // when each step struck, for addDestroys
	for ; t < end; t += ms(between(500*time.Millisecond, 8*time.Second)) {
		steps = append(steps, t)
		free := func(w *genWorker) bool { return w.running && w.busyUntil <= t }
		var kinds []Kind
		for _, k := range Kinds {
			ok := false
			switch k {
			case Crash:
				ok = running() >= 2
			case Leave:
				ok = running() >= 2 && pick(free) != nil
			case Join:
				ok = running() < su.MaxWorkers
			case Restart:
				ok = running() < su.MaxWorkers && pick(func(w *genWorker) bool { return w.crashed }) != nil
			case Pause, PartitionFail, PartitionHang:
				ok = pick(free) != nil
			case ClockJump:
				ok = true
			case SlowHandlers:
				ok = pick(func(w *genWorker) bool { return w.running && w.slowHUntil <= t }) != nil
			case SlowRenewals:
				ok = pick(func(w *genWorker) bool { return w.running && w.slowRUntil <= t }) != nil
			}
			if ok {
				kinds = append(kinds, k)
			}
		}
		var total float64
		for _, k := range kinds {
			total += weights[k]
		}
		r := rng.Float64() * total
		k := kinds[len(kinds)-1]
		for _, c := range kinds {
			if r < weights[c] {
				k = c
				break
			}
			r -= weights[c]
		}

		e := Event{At: t, Kind: k}
		switch k {
		case Crash:
			w := pick(func(w *genWorker) bool { return w.running })
			w.running, w.crashed = false, true
			e.Worker = w.id
		case Leave:
			w := pick(free)
			w.running = false
			e.Worker = w.id
		case Join:
			w := &genWorker{id: fmt.Sprintf("w%d", len(ws)), running: true}
			ws = append(ws, w)
			e.Worker = w.id
		case Restart:
			w := pick(func(w *genWorker) bool { return w.crashed })
			// busyUntil and the slow marks stay: a heal still due from
			// before the crash ends that fault on the new process too, so
			// no new fault of the same sort may start before it.
			w.running, w.crashed = true, false
			e.Worker = w.id
		case Pause:
			w := pick(free)
			// From well inside the pause budget to well past TTL + lock-delay.
			e.For = ms(between(p.PauseBudget/2+time.Millisecond, 2*p.TTL+p.EffectiveLockDelay()+time.Second))
			w.busyUntil = t + e.For
			e.Worker = w.id
		case PartitionFail, PartitionHang:
			w := pick(free)
			e.For = ms(between(p.RenewEvery, 3*p.TTL))
			w.busyUntil = t + e.For
			e.Worker = w.id
		case ClockJump:
			e.Size = ms(between(100*time.Millisecond, p.TTL))
		case SlowHandlers:
			w := pick(func(w *genWorker) bool { return w.running && w.slowHUntil <= t })
			e.For = ms(between(2*time.Second, 20*time.Second))
			e.Size = ms(between(500*time.Millisecond, 2*su.DrainTimeout))
			w.slowHUntil = t + e.For
			e.Worker = w.id
		case SlowRenewals:
			w := pick(func(w *genWorker) bool { return w.running && w.slowRUntil <= t })
			e.For = ms(between(2*time.Second, 20*time.Second))
			e.Size = ms(between(p.RenewEvery/4, p.TTL))
			e.LateReply = rng.IntN(2) == 0
			w.slowRUntil = t + e.For
			e.Worker = w.id
		}
		add(e)
	}
	s.FaultsEnd = max(s.FaultsEnd, t)
	// The fleet must end with at least two workers to balance.
	for running() < 2 {
		w := &genWorker{id: fmt.Sprintf("w%d", len(ws)), running: true}
		ws = append(ws, w)
		add(Event{At: s.FaultsEnd, Kind: Join, Worker: w.id})
	}
	s.addDestroys(steps, t)
	s.addAssignorFaults(steps, t)
	s.addRejoins(steps, t)
	s.addZoneOutage()
	s.addReshards(steps)
	s.Setup.Load = newLoadSetup(seed, su.Shards, s.FaultsEnd)
	slices.SortStableFunc(s.Events, func(a, b Event) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return s
}

// Running returns the workers the schedule leaves running at the end, in
// order of first start.
func (s Schedule) Running() []string {
	order, running := s.membership(s.Events, math.MaxInt64)
	var out []string
	for _, id := range order {
		if running[id] {
			out = append(out, id)
		}
	}
	return out
}

// membership plays the joins, restarts, crashes and leaves among events
// (in the order given) that come before t. It returns the worker IDs in
// order of first start and which of them run.
func (s Schedule) membership(events []Event, t time.Duration) ([]string, map[string]bool) {
	var order []string
	running := map[string]bool{}
	for i := range s.Setup.Workers {
		id := fmt.Sprintf("w%d", i)
		order = append(order, id)
		running[id] = true
	}
	// In time order: the streams laid over the main one append their
	// events, a rejoin's start among them, after later ones of the main.
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	for _, e := range events {
		if e.At >= t || e.Assignor {
			continue
		}
		switch e.Kind {
		case Join:
			order = append(order, e.Worker)
			running[e.Worker] = true
		case Restart:
			running[e.Worker] = true
		case Rejoin:
			running[e.Worker] = e.Heal
		case Crash, Leave:
			running[e.Worker] = false
		}
	}
	return order, running
}
