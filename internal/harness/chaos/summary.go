package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shardlease/shardlease/internal/offsetlog"
)

// KindStats are one fault kind's figures.
type KindStats struct {
	Kind   Kind
	Faults int // injected
	Failed int // injections that failed (Fault.Err)
	// Moved counts the faults after which every shard the victim held was
	// fenced by a newer owner; Kept those after which some were not (the
	// victim kept its lease, as slow renewals may allow).
	Moved, Kept int
	Took        []time.Duration // per moved fault: fault to the last fence
	Duplicates  []int64         // per moved fault, where Counted: records processed twice
	// FencedOut counts the commits attempted by fenced-out owners, each
	// attributed to the latest fault that touched the worker (Touches)
	// and started before it; of them, StaleRejected were refused by the
	// store's fence, Cancelled failed otherwise (most: the worker's own
	// lease deadline cancelled them first), StaleAccepted were accepted
	// (must be 0).
	FencedOut, StaleRejected, Cancelled, StaleAccepted int
	// Overlaps counts the instants two processes ran one shard, and Woke
	// the runs of SIGSTOPped processes that woke after a newer owner had
	// started (RunVerdict), each attributed to the latest fault that
	// touched the older run's worker before the newer run started.
	Overlaps, Woke int
	// Elected: per assignor fault, from the fault to a new assignor's
	// lock on P/assignor (Fault.ElectedAfter); NotElected counts those
	// after which none was seen.
	Elected    []time.Duration
	NotElected int
}

// None is the row of fenced-out commits no fault explains (a worker that
// stepped down on its own, on a busy machine).
const None Kind = "(no fault)"

// Summary is a run's figures.
type Summary struct {
	Kinds   []*KindStats
	Verdict Verdict
	Runs    RunVerdict
}

// Summarize derives the figures of a run from its history, the verdicts on
// its store calls and its handler runs, its faults, and the stream's rate
// (records per second per shard).
func Summarize(h *History, v Verdict, rv RunVerdict, faults []Fault, rate int) Summary {
	s := Summary{Verdict: v, Runs: rv}
	rows := map[Kind]*KindStats{}
	for _, k := range slices.Concat(WorkerKinds, AssignorKinds, AgentKinds, []Kind{LeaderKill, CoordWiped, CoordRestored, None}) {
		rows[k] = &KindStats{Kind: k}
		s.Kinds = append(s.Kinds, rows[k])
	}
	for _, f := range faults {
		r := rows[f.Kind]
		r.Faults++
		if f.Err != "" {
			r.Failed++
			continue
		}
		if f.Kind == LeaderKill || f.Kind == CoordWiped || f.Kind == CoordRestored {
			continue
		}
		if d, ok := f.ElectedAfter(); ok {
			r.Elected = append(r.Elected, d)
		} else if f.Kind.assignor() {
			r.NotElected++
		}
		tk := h.TakeoverOf(f, rate)
		switch {
		case tk.Done:
			r.Moved++
			r.Took = append(r.Took, tk.Took)
			if tk.Counted {
				r.Duplicates = append(r.Duplicates, tk.Duplicates)
			}
		case tk.Shards > 0:
			r.Kept++
		}
	}
	for _, o := range rv.Overlaps {
		rows[blame(faults, o.Old.Worker, o.New.Start)].Overlaps++
	}
	for _, o := range rv.Woke {
		rows[blame(faults, o.Old.Worker, o.New.Start)].Woke++
	}
	for _, o := range v.FencedOut {
		r := rows[blame(faults, o.Worker, o.Start)]
		r.FencedOut++
		switch o.Result {
		case offsetlog.ResultOK:
			r.StaleAccepted++
		case offsetlog.ResultStale:
			r.StaleRejected++
		default:
			r.Cancelled++
		}
	}
	return s
}

// blame is the kind of the latest fault that touched worker and started
// at or before t (wall clock, ns), or None.
func blame(faults []Fault, worker string, t int64) Kind {
	k := None
	var at time.Time
	for _, f := range faults {
		if f.Start.UnixNano() <= t && f.Touches(worker) && f.Start.After(at) {
			k, at = f.Kind, f.Start
		}
	}
	return k
}

// Table renders the summary as a fixed-width table.
func (s Summary) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tinjected\tfailed\tmoved\tkept\ttakeover p50\tp99\tmax\tdup/takeover p50\tp99\tfenced-out commits\tfence refused\tcancelled\taccepted\toverlaps\twoke late\t")
	for _, r := range s.Kinds {
		if r.Faults == 0 && r.FencedOut == 0 && r.Overlaps == 0 && r.Woke == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Kind, r.Faults, r.Failed, r.Moved, r.Kept,
			durQ(r.Took, 50), durQ(r.Took, 99), durQ(r.Took, 100),
			intQ(r.Duplicates, 50), intQ(r.Duplicates, 99), r.FencedOut, r.StaleRejected, r.Cancelled, r.StaleAccepted, r.Overlaps, r.Woke)
	}
	tw.Flush()
	for _, r := range s.Kinds {
		if r.Kind.assignor() && r.Faults > 0 {
			fmt.Fprintf(&b, "%s: new assignor (another session on P/assignor) after p50 %s, max %s, none within %v after %d; the victim's shards owned again after p50 %s, max %s\n",
				r.Kind, durQ(r.Elected, 50), durQ(r.Elected, 100), electWithin, r.NotElected, durQ(r.Took, 50), durQ(r.Took, 100))
		}
	}
	v := s.Verdict
	fmt.Fprintf(&b, "history: %d operations; %d commits (%d accepted, %d rejected as stale, %d failed, %d cut off by a kill); %d loads\n",
		v.Ops, v.Commits, v.Accepted, v.Rejected, v.Errors, v.Unknown, v.Loads)
	fmt.Fprintf(&b, "stale commits accepted: %d of %d attempted by fenced-out owners; violations: %d\n",
		v.StaleAccepted, len(v.FencedOut), len(v.Problems))
	rv := s.Runs
	var woke []time.Duration // from SIGCONT to the woken run's end
	for _, o := range rv.Woke {
		woke = append(woke, time.Duration(o.Old.End-o.Pause.To))
	}
	fmt.Fprintf(&b, "handler runs: %d checked over %d shards, %d effects; instants two processes ran one shard: %d\n",
		rv.Runs, rv.Shards, rv.Effects, len(rv.Overlaps))
	fmt.Fprintf(&b, "paused runs that woke after the next owner started: %d (SIGCONT to end p50 %s, max %s); their effects after it: %d; run violations: %d\n",
		len(rv.Woke), durQ(woke, 50), durQ(woke, 100), rv.WokeEffects, len(rv.Problems))
	return b.String()
}

// quantile is the nearest-rank q-th percentile of sorted xs.
func quantile[T cmp.Ordered](xs []T, q int) (T, bool) {
	var zero T
	if len(xs) == 0 {
		return zero, false
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	i := (q*len(xs) + 99) / 100
	return xs[max(0, min(len(xs)-1, i-1))], true
}

// durQ formats the q-th percentile of xs: to 10 ms, or to 1 ms below a
// second.
func durQ(xs []time.Duration, q int) string {
	d, ok := quantile(xs, q)
	switch {
	case !ok:
		return "–"
	case d < time.Second && d > -time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

func intQ(xs []int64, q int) string {
	if n, ok := quantile(xs, q); ok {
		return fmt.Sprint(n)
	}
	return "–"
}

func sortFaults(fs []Fault) {
	slices.SortFunc(fs, func(a, b Fault) int { return a.Start.Compare(b.Start) })
}
