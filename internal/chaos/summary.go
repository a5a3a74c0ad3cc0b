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
	// attributed to the latest fault of the worker (or of its Consul
	// server) that started before it; of them, StaleRejected were refused
	// by the store's fence, Cancelled failed otherwise (most: the worker's
	// own lease deadline cancelled them first), StaleAccepted were
	// accepted (must be 0).
	FencedOut, StaleRejected, Cancelled, StaleAccepted int
}

// None is the row of fenced-out commits no fault explains (a worker that
// stepped down on its own, on a busy machine).
const None Kind = "(no fault)"

// Summary is a run's figures.
type Summary struct {
	Kinds   []*KindStats
	Verdict Verdict
}

// Summarize derives the figures of a run from its history, its faults, the
// server each worker talks to, and the stream's rate (records per second
// per shard).
func Summarize(h *History, v Verdict, faults []Fault, servers map[string]string, rate int) Summary {
	s := Summary{Verdict: v}
	rows := map[Kind]*KindStats{}
	for _, k := range append(append([]Kind{}, WorkerKinds...), LeaderKill, None) {
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
		if f.Kind == LeaderKill {
			continue
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
	for _, o := range v.FencedOut {
		k := None
		var at time.Time
		for _, f := range faults {
			if f.Start.UnixNano() <= o.Start && (f.Target == o.Worker || f.Target == servers[o.Worker]) && f.Start.After(at) {
				k, at = f.Kind, f.Start
			}
		}
		r := rows[k]
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

// Table renders the summary as a fixed-width table.
func (s Summary) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tinjected\tfailed\tmoved\tkept\ttakeover p50\tp99\tmax\tdup/takeover p50\tp99\tfenced-out commits\tfence refused\tcancelled\taccepted\t")
	for _, r := range s.Kinds {
		if r.Faults == 0 && r.FencedOut == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t\n", r.Kind, r.Faults, r.Failed, r.Moved, r.Kept,
			durQ(r.Took, 50), durQ(r.Took, 99), durQ(r.Took, 100),
			intQ(r.Duplicates, 50), intQ(r.Duplicates, 99), r.FencedOut, r.StaleRejected, r.Cancelled, r.StaleAccepted)
	}
	tw.Flush()
	v := s.Verdict
	fmt.Fprintf(&b, "history: %d operations; %d commits (%d accepted, %d rejected as stale, %d failed, %d cut off by a kill); %d loads\n",
		v.Ops, v.Commits, v.Accepted, v.Rejected, v.Errors, v.Unknown, v.Loads)
	fmt.Fprintf(&b, "stale commits accepted: %d of %d attempted by fenced-out owners; violations: %d\n",
		v.StaleAccepted, len(v.FencedOut), len(v.Problems))
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

func durQ(xs []time.Duration, q int) string {
	if d, ok := quantile(xs, q); ok {
		return d.Round(10 * time.Millisecond).String()
	}
	return "–"
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
