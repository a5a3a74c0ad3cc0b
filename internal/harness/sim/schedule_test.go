package sim

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestScheduleIsAFunctionOfTheSeed: replaying a seed replays its faults, so
// the schedule must not depend on anything but the seed.
func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		a, b := NewSchedule(seed), NewSchedule(seed)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d gave two schedules:\n%v\n%v", seed, a, b)
		}
	}
	if reflect.DeepEqual(NewSchedule(1).Events, NewSchedule(2).Events) {
		t.Fatal("seeds 1 and 2 gave the same events")
	}
}

// TestScheduleIsPlayable checks what Run relies on: events in time order,
// faults only on workers that run, every fault healed by FaultsEnd, no two
// faults that set a worker's coordinator mode (pause, partitions, a
// destroy's cut) in force on one worker at once, a destroy striking a
// worker none of them holds, at least two workers left to balance, a
// valid policy.
func TestScheduleIsPlayable(t *testing.T) {
	kinds := map[Kind]int{}
	cuts := 0
	for seed := uint64(1); seed <= 2000; seed++ {
		s := NewSchedule(seed)
		var modes []Event
		for _, e := range s.Events {
			if !e.Heal && !e.Assignor && (e.Kind == Pause || e.Kind == PartitionFail || e.Kind == PartitionHang || e.Kind == Destroy && e.For > 0) {
				modes = append(modes, e)
			}
		}
		for i, a := range modes {
			for _, b := range modes[i+1:] {
				if a.Worker == b.Worker && a.At < b.At+b.For && b.At < a.At+a.For {
					t.Fatalf("seed %d: %v and %v overlap on one worker:\n%v", seed, a, b, s)
				}
			}
		}
		for _, e := range s.Events {
			if e.Kind != Destroy || e.Heal {
				continue
			}
			if e.For > 0 {
				cuts++
			}
			for _, m := range modes {
				if m.Worker == e.Worker && m != e && m.At <= e.At && e.At < m.At+m.For {
					t.Fatalf("seed %d: %v strikes during %v:\n%v", seed, e, m, s)
				}
			}
		}
		if err := s.Setup.Policy.Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !slices.IsSortedFunc(s.Events, func(a, b Event) int { return int(a.At - b.At) }) {
			t.Fatalf("seed %d: events out of order:\n%v", seed, s)
		}
		running := map[string]bool{}
		started := map[string]bool{}
		for i := range s.Setup.Workers {
			id := "w" + string(rune('0'+i))
			running[id], started[id] = true, true
		}
		for _, e := range s.Events {
			if e.At > s.FaultsEnd || e.At+e.For > s.FaultsEnd {
				t.Fatalf("seed %d: %v outlasts FaultsEnd %v", seed, e, s.FaultsEnd)
			}
			if !e.Heal {
				kinds[e.Kind]++
			}
			switch {
			case e.Assignor:
				if e.Worker != "" {
					t.Fatalf("seed %d: %v names its worker before it strikes", seed, e)
				}
			case e.Kind == ClockJump || e.Kind == Reshard || e.Kind == ReshardCancel:
			case e.Kind == Join:
				if started[e.Worker] {
					t.Fatalf("seed %d: %v reuses an ID", seed, e)
				}
				running[e.Worker], started[e.Worker] = true, true
			case e.Kind == Restart:
				if running[e.Worker] || !started[e.Worker] {
					t.Fatalf("seed %d: %v restarts a worker that is running or never ran", seed, e)
				}
				running[e.Worker] = true
			case e.Kind == Rejoin && e.Heal:
				if running[e.Worker] {
					t.Fatalf("seed %d: %v starts a worker that is running", seed, e)
				}
				running[e.Worker] = true
			case e.Heal:
				if !started[e.Worker] {
					t.Fatalf("seed %d: %v heals a worker that never ran", seed, e)
				}
			case !running[e.Worker]:
				t.Fatalf("seed %d: %v strikes a worker that is not running", seed, e)
			case e.Kind == Crash || e.Kind == Leave || e.Kind == Rejoin:
				running[e.Worker] = false
			}
		}
		n := 0
		for _, r := range running {
			if r {
				n++
			}
		}
		if got := s.Running(); len(got) != n || n < 2 {
			t.Fatalf("seed %d: %d workers left running (Running says %v); want at least 2", seed, n, got)
		}
	}
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("2000 seeds never inject %s", k)
		}
	}
	if d := kinds[Destroy]; cuts < d/3 || cuts > 2*d/3 {
		t.Errorf("%d of %d destroys cut their worker off; want about half", cuts, d)
	}
}

// TestScheduleAimsAtTheAssignor: the assignor's own faults are in most
// seeds — its crash (with a restart and, often, a joining candidate),
// its pause with a write in hand, its session destroyed, and workers served
// a stale assignment — and the stream that adds them never overlaps its
// own faults, never lets an assignor pause freeze for less than TTL + 0.5 s,
// and never runs a stale view past StuckAfter or lags it past a third of it.
func TestScheduleAimsAtTheAssignor(t *testing.T) {
	const seeds = 2000
	kinds := map[Kind]int{}
	with, joins := 0, 0
	for seed := uint64(1); seed <= seeds; seed++ {
		s := NewSchedule(seed)
		p := s.Setup.Policy
		aimed := false
		var crashes, restarts int
		var end time.Duration // the stream's latest fault is over
		for _, e := range s.Events {
			switch {
			case e.Heal || !e.Assignor && e.Kind != StaleAssignment:
				continue
			case e.Kind == Restart:
				restarts++
				continue
			}
			aimed = true
			kinds[e.Kind]++
			if e.At < end {
				t.Fatalf("seed %d: %v overlaps the stream's fault before it:\n%v", seed, e, s)
			}
			end = e.At + e.For
			switch e.Kind {
			case Crash:
				crashes++
				if slices.ContainsFunc(s.Events, func(j Event) bool {
					return j.Kind == Join && j.At >= e.At+p.TTL && j.At <= e.At+p.TTL+p.EffectiveLockDelay()*5/4+time.Second
				}) {
					joins++
				}
			case Pause:
				if e.For-e.Size < p.TTL+500*time.Millisecond {
					t.Fatalf("seed %d: %v may freeze for less than TTL + 0.5 s", seed, e)
				}
			case StaleAssignment:
				if e.For > stuckAfter(s.Setup) || 3*e.Size > stuckAfter(s.Setup) || e.Worker == "" {
					t.Fatalf("seed %d: %v outlasts StuckAfter %v, lags more than a third of it, or names nobody", seed, e, stuckAfter(s.Setup))
				}
			}
		}
		if crashes != restarts {
			t.Fatalf("seed %d: %d assignor crashes, %d restarts of them:\n%v", seed, crashes, restarts, s)
		}
		if aimed {
			with++
		}
	}
	t.Logf("%d of %d seeds aim at the assignor: %v; %d assignor crashes with a candidate joining", with, seeds, kinds, joins)
	for _, k := range []Kind{Crash, Pause, Destroy, StaleAssignment} {
		if kinds[k] < seeds/10 {
			t.Errorf("%d seeds inject %s of the assignor's kind only %d times", seeds, k, kinds[k])
		}
	}
	if with < seeds*3/4 || joins < kinds[Crash]/4 {
		t.Errorf("%d of %d seeds aim at the assignor, %d of %d crashes have a joining candidate", with, seeds, joins, kinds[Crash])
	}
}

// TestScheduleReshards: about a third of the seeds reshard, once or
// twice, some of them cancelling, under both lineages; each count is
// whole, in 4..64, new, and shares a factor with every count before it;
// everything falls before FaultsEnd, at least reshardGap apart, and the
// bound counts the most shards.
func TestScheduleReshards(t *testing.T) {
	const seeds = 2000
	var with, twice, cancels int
	lineages := map[shard.Lineage]int{}
	for seed := uint64(1); seed <= seeds; seed++ {
		s := NewSchedule(seed)
		counts := []int{s.Setup.Shards}
		var last time.Duration
		for _, e := range s.Events {
			switch e.Kind {
			case ReshardCancel:
				cancels++
				if e.At >= s.FaultsEnd {
					t.Fatalf("seed %d: %v at or past FaultsEnd %v", seed, e, s.FaultsEnd)
				}
				continue
			case Reshard:
			default:
				continue
			}
			if e.At >= s.FaultsEnd || len(counts) > 1 && e.At-last < reshardGap {
				t.Fatalf("seed %d: %v past FaultsEnd %v or within %v of the reshard before", seed, e, s.FaultsEnd, reshardGap)
			}
			if e.Shards < 4 || e.Shards > maxReshardShards || slices.Contains(counts, e.Shards) ||
				slices.ContainsFunc(counts, func(c int) bool { return gcd(c, e.Shards) == 1 }) {
				t.Fatalf("seed %d: %v after counts %v", seed, e, counts)
			}
			last = e.At
			counts = append(counts, e.Shards)
			lineages[e.Lineage]++
		}
		switch {
		case len(counts) == 1 && s.Setup.MostShards != 0, len(counts) > 1 && s.Setup.MostShards != slices.Max(counts):
			t.Fatalf("seed %d: MostShards %d with counts %v", seed, s.Setup.MostShards, counts)
		case len(counts) > 1 && Bound(s.Setup) <= Bound(Setup{Policy: s.Setup.Policy, Shards: slices.Max(counts), MaxWorkers: s.Setup.MaxWorkers,
			MaxMovesInFlight: s.Setup.MaxMovesInFlight, DrainTimeout: s.Setup.DrainTimeout}):
			t.Fatalf("seed %d: bound %v does not allow for the reshard", seed, Bound(s.Setup))
		}
		if len(counts) > 1 {
			with++
		}
		if len(counts) > 2 {
			twice++
		}
	}
	t.Logf("%d of %d seeds reshard, %d twice; %d cancels; lineages %v", with, seeds, twice, cancels, lineages)
	if with < seeds/4 || with > seeds*2/5 || twice < with/5 || cancels < with/4 || lineages[shard.LineageRange] < with/8 {
		t.Errorf("%d of %d seeds reshard, %d twice, %d cancels, lineages %v: want about a third, a good part twice, a part cancelling, some of lineage range",
			with, seeds, twice, cancels, lineages)
	}
}
