package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
)

// History is a merged offsetlog history, indexed by shard.
type History struct {
	Ops     []offsetlog.Op
	byShard map[shard.ID]*shardOps
}

// shardOps is one shard's part of the history.
type shardOps struct {
	all     []offsetlog.Op // by start
	writes  prefixMax      // accepted fences and commits: their tokens
	commits prefixMax      // accepted commits: their offsets
	fences  []offsetlog.Op // accepted fences, by end
}

// prefixMax answers "the highest value among the operations that returned
// before time t" in O(log n): operations sorted by end, with the running
// maximum of their values.
type prefixMax struct {
	ends []int64
	max  []int64
}

func newPrefixMax(ops []offsetlog.Op, value func(offsetlog.Op) int64) prefixMax {
	ops = slices.Clone(ops)
	slices.SortFunc(ops, func(a, b offsetlog.Op) int { return cmp.Compare(a.End, b.End) })
	var p prefixMax
	for i, o := range ops {
		v := value(o)
		if i > 0 {
			v = max(v, p.max[i-1])
		}
		p.ends, p.max = append(p.ends, o.End), append(p.max, v)
	}
	return p
}

// before returns the highest value of an operation that ended before t, and
// whether there was one.
func (p prefixMax) before(t int64) (int64, bool) {
	i, _ := slices.BinarySearch(p.ends, t) // first end ≥ t
	if i == 0 {
		return 0, false
	}
	return p.max[i-1], true
}

// NewHistory indexes ops (as offsetlog.Read returns them).
func NewHistory(ops []offsetlog.Op) *History {
	h := &History{Ops: ops, byShard: map[shard.ID]*shardOps{}}
	parts := map[shard.ID][]offsetlog.Op{}
	for _, o := range ops {
		parts[o.Shard] = append(parts[o.Shard], o)
	}
	for id, all := range parts {
		var writes, commits, fences []offsetlog.Op
		for _, o := range all {
			if o.Result != offsetlog.ResultOK {
				continue
			}
			switch o.Kind {
			case offsetlog.OpCommit:
				writes, commits = append(writes, o), append(commits, o)
			case offsetlog.OpFence:
				writes, fences = append(writes, o), append(fences, o)
			}
		}
		slices.SortFunc(fences, func(a, b offsetlog.Op) int { return cmp.Compare(a.End, b.End) })
		h.byShard[id] = &shardOps{
			all:     all,
			writes:  newPrefixMax(writes, func(o offsetlog.Op) int64 { return int64(o.Token) }),
			commits: newPrefixMax(commits, func(o offsetlog.Op) int64 { return o.Offset }),
			fences:  fences,
		}
	}
	return h
}

// Shards returns the shards the history touches, sorted.
func (h *History) Shards() []shard.ID { return slices.Sorted(maps.Keys(h.byShard)) }

// Verdict is what Check found.
type Verdict struct {
	Ops, Commits, Accepted, Rejected, Errors, Unknown, Loads int
	// FencedOut lists the commits attempted by fenced-out owners: a
	// higher token had been accepted for the shard before the commit
	// started. Every one must have been rejected.
	FencedOut []offsetlog.Op
	// StaleAccepted counts the FencedOut commits that were accepted.
	StaleAccepted int
	// Problems names every violation: stale commits accepted, offsets
	// that went back, loads that missed an acknowledged commit.
	Problems []string
}

// Check runs the checkers that need no search over the history:
//
//   - no stale commit: no accepted commit has a token below one accepted
//     (fence or commit) for its shard before it started;
//   - offsets never regress: no accepted commit stores an offset below one
//     acknowledged for its shard before it started;
//   - no acknowledged commit lost: no load (a new owner's, after its fence,
//     or the final one) returns an offset below one acknowledged for its
//     shard before the load started.
func (h *History) Check() Verdict {
	v := Verdict{Ops: len(h.Ops)}
	bad := func(o offsetlog.Op, format string, args ...any) {
		v.Problems = append(v.Problems, o.String()+": "+fmt.Sprintf(format, args...))
	}
	for _, id := range h.Shards() {
		s := h.byShard[id]
		for _, o := range s.all {
			switch o.Kind {
			case offsetlog.OpCommit:
				v.Commits++
				switch o.Result {
				case offsetlog.ResultOK:
					v.Accepted++
				case offsetlog.ResultStale:
					v.Rejected++
				case offsetlog.ResultError:
					v.Errors++
				default:
					v.Unknown++
				}
				if hi, ok := s.writes.before(o.Start); ok && int64(o.Token) < hi {
					v.FencedOut = append(v.FencedOut, o)
					if o.Result == offsetlog.ResultOK {
						v.StaleAccepted++
						bad(o, "stale commit accepted: token %d had been accepted before it started", hi)
					}
				}
				if o.Result != offsetlog.ResultOK {
					continue
				}
				if off, ok := s.commits.before(o.Start); ok && o.Offset < off {
					bad(o, "offset went back: %d had been acknowledged before it started", off)
				}
			case offsetlog.OpLoad:
				if o.Result != offsetlog.ResultOK {
					continue
				}
				v.Loads++
				if off, ok := s.commits.before(o.Start); ok && o.CP.Offset < off {
					bad(o, "load returned offset %d, but %d had been acknowledged before it started: a commit was lost", o.CP.Offset, off)
				}
			}
		}
	}
	return v
}

// Pause is a SIGSTOP the harness sent to a worker, to its SIGCONT: a
// window in which the worker's process ran nothing.
type Pause struct {
	Worker   string
	From, To int64 // wall clock, ns: read just before the SIGSTOP, just after the SIGCONT
}

// Pauses are the SIGSTOP windows of the faults (SigStop and AssignorStop
// only: an agent-stop freezes the agent, not its workers, which keep
// running).
func Pauses(faults []Fault) []Pause {
	var out []Pause
	for _, f := range faults {
		if f.Kind.stops() && f.Err == "" {
			out = append(out, Pause{Worker: f.Target, From: f.Start.UnixNano(), To: f.End.UnixNano()})
		}
	}
	return out
}

// CloseRuns returns the runs with an end for each run that has none (its
// process was killed during it): the time its process was seen to exit,
// from lives (per worker, when each of its processes ran, as
// Fleet.Lives reports). A run whose process is not known to have exited
// keeps End math.MaxInt64: it never ended, and overlaps every later run.
func CloseRuns(ivs []offsetlog.Interval, lives map[string][]Life) []offsetlog.Interval {
	out := slices.Clone(ivs)
	for i, iv := range out {
		if iv.End != math.MaxInt64 {
			continue
		}
		var proc *Life
		for j, l := range lives[iv.Worker] {
			if l.Start.UnixNano() <= iv.Start {
				proc = &lives[iv.Worker][j]
			}
		}
		if proc != nil && !proc.Exit.IsZero() && proc.Exit.UnixNano() >= iv.Start {
			out[i].End = proc.Exit.UnixNano()
		}
	}
	return out
}

// Overlap is a run of an older token that had not ended when a run of a
// newer token of the same shard started.
type Overlap struct {
	Old, New offsetlog.Interval
	// Length is how long both ran: from the newer start to the sooner of
	// the two ends.
	Length time.Duration
	// Effects counts the older run's effects at or after the newer start.
	Effects int
	// Pause is the SIGSTOP of the older run's process that spans the newer
	// start, when there is one (see CheckRuns).
	Pause *Pause
}

func (o Overlap) String() string {
	at := func(ns int64) string {
		if ns == math.MaxInt64 {
			return "never ended"
		}
		return time.Unix(0, ns).Format("15:04:05.000000")
	}
	s := fmt.Sprintf("%s: %s (token %d, process %s) ran from %s to %s; %s (token %d, process %s) started at %s and ran to %s: %v of overlap, %d effect(s) of token %d from the newer start on",
		o.Old.Shard, o.Old.Worker, o.Old.Token, o.Old.Process(), at(o.Old.Start), at(o.Old.End),
		o.New.Worker, o.New.Token, o.New.Process(), at(o.New.Start), at(o.New.End), o.Length, o.Effects, o.Old.Token)
	if o.Pause != nil {
		s += fmt.Sprintf(" (SIGSTOP at %s, SIGCONT at %s)", at(o.Pause.From), at(o.Pause.To))
	}
	return s
}

// RunVerdict is what CheckRuns found.
type RunVerdict struct {
	// Runs is how many handler runs were checked, over Shards shards;
	// Effects how many effects they recorded.
	Runs, Shards, Effects int
	// Overlaps are the instants at which two processes ran one shard.
	// Must be empty.
	Overlaps []Overlap
	// Woke are the runs whose process the harness had SIGSTOPped past the
	// pause budget before a newer owner of the shard started, and that
	// ended after that start: allowed as long as the run made no effect
	// from the newer start on (WokeEffects counts those, and each is a
	// problem).
	Woke        []Overlap
	WokeEffects int
	// Problems names every violation: overlaps, effects of woken runs,
	// one token run by two processes.
	Problems []string
}

// CheckRuns checks the handler runs (as ReadAll returns them, closed by
// CloseRuns): for each shard, of any two runs with different tokens, the
// older token's must have ended before the newer's started — no instant
// at which two processes ran one shard. One exception, counted apart in
// Woke: a process SIGSTOPped (pauses) during the older run, before the
// newer one started, for longer than the lease's pause budget. Such a
// pause is beyond what the lease policy promises to cover: the process
// ran nothing while stopped, and on waking, past its deadline, its claim
// refuses by the clock, but its handler needs a moment to notice and
// return, which may reach past the newer start (whether the SIGCONT came
// before it or after). Its run may therefore end late, but any effect it
// records at or after the newer start is a violation, as is any effect of
// an older token from then on. A pause within the budget gets no
// exception. Two processes running one token is a violation too.
func CheckRuns(ivs []offsetlog.Interval, pauses []Pause, budget time.Duration) RunVerdict {
	var v RunVerdict
	byShard := map[shard.ID][]offsetlog.Interval{}
	for _, iv := range ivs {
		byShard[iv.Shard] = append(byShard[iv.Shard], iv)
		v.Runs++
		v.Effects += len(iv.Effects)
	}
	v.Shards = len(byShard)
	for _, id := range slices.Sorted(maps.Keys(byShard)) {
		runs := byShard[id]
		slices.SortStableFunc(runs, func(a, b offsetlog.Interval) int { return cmp.Compare(a.Start, b.Start) })
		for j := range runs {
			for i := range j {
				old, next := runs[i], runs[j]
				if old.Token == next.Token {
					if old.Process() != next.Process() {
						v.Problems = append(v.Problems, fmt.Sprintf("%s: token %d run by two processes, %s and %s", id, old.Token, old.Process(), next.Process()))
					}
					continue
				}
				if old.Token > next.Token {
					old, next = next, old
				}
				if old.End < next.Start {
					continue
				}
				o := Overlap{Old: old, New: next, Length: time.Duration(min(old.End, next.End) - next.Start)}
				for _, e := range old.Effects {
					if e.At >= next.Start {
						o.Effects++
					}
				}
				if p, ok := pausedPastBudget(pauses, old, next.Start, budget); ok {
					o.Pause = &p
					v.Woke = append(v.Woke, o)
					v.WokeEffects += o.Effects
					if o.Effects > 0 {
						v.Problems = append(v.Problems, "a paused run acted after a newer owner started: "+o.String())
					}
					continue
				}
				v.Overlaps = append(v.Overlaps, o)
				v.Problems = append(v.Problems, "two processes ran one shard: "+o.String())
			}
		}
	}
	return v
}

// pausedPastBudget finds a SIGSTOP of old's worker that came after old
// started and before t, and lasted longer than budget, after whose SIGCONT
// old ended within budget: old's process was frozen past what its lease
// covers while its run was under way, and on waking returned as promptly
// as a handler can. A run that went on longer after waking is not excused
// by the pause: it is an overlap like any other.
func pausedPastBudget(pauses []Pause, old offsetlog.Interval, t int64, budget time.Duration) (Pause, bool) {
	for _, p := range pauses {
		if p.Worker == old.Worker && old.Start < p.From && p.From <= t && time.Duration(p.To-p.From) > budget &&
			old.End <= p.To+int64(budget) {
			return p, true
		}
	}
	return Pause{}, false
}
