package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints one line per row, each shardlease row followed by
// the baseline rows it is compared with and its ratios to them.
func (r Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, line := range r.TableLines() {
		fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
	}
	tw.Flush()
	r.writeNotes(w, "  ")
	fmt.Fprintf(w, "\n%s\n", r.Machine.summary(r.Trials, r.Small))
}

// WriteMarkdown prints the same table as Markdown, for docs/benchmarks.md.
func (r Report) WriteMarkdown(w io.Writer) {
	for i, line := range r.TableLines() {
		fmt.Fprintf(w, "| %s |\n", strings.Join(line, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(line)))
		}
	}
	fmt.Fprintln(w)
	r.writeNotes(w, "- ")
	fmt.Fprintf(w, "\n%s\n", r.Machine.summary(r.Trials, r.Small))
}

// TableLines are the table's header and rows: the rows in the results'
// order, except that a baseline row follows the first shardlease row it is
// compared with, whose ratio columns give shardlease ÷ that baseline for
// p50, p99 and max.
func (r Report) TableLines() [][]string {
	lines := [][]string{{"scenario", "metric", "system", "policy", "trials", "p50", "p99", "max",
		"÷ baseline (p50 / p99 / max)", "÷ baseline-tuned (p50 / p99 / max)", "goal", "met"}}
	for _, res := range tableOrder(r.Results) {
		line := []string{res.Scenario, res.Metric + unitSuffix(res.Unit), res.System, res.Policy, strconv.Itoa(res.Trials),
			num(res.P50), num(res.P99), num(res.Max), "", "", res.Goal, metString(res.Met)}
		if res.System == SystemShardlease {
			c := Compare(r.Results, res)
			line[8], line[9] = ratios(res, c.Baseline), ratios(res, c.Tuned)
		}
		lines = append(lines, line)
	}
	return lines
}

// ratios is a table cell: a's p50, p99 and max each divided by b's, or
// "–" without b.
func ratios(a Result, b *Result) string {
	if b == nil {
		return "–"
	}
	return ratio(a.P50, b.P50) + " / " + ratio(a.P99, b.P99) + " / " + ratio(a.Max, b.Max)
}

// writeNotes prints each row's extra figures and note, and the failures.
func (r Report) writeNotes(w io.Writer, bullet string) {
	for _, res := range r.Results {
		if res.Note != "" || len(res.Extra) > 0 {
			fmt.Fprintf(w, "%s%s / %s / %s:", bullet, res.Scenario, res.System, res.Metric)
			for _, k := range sortedKeys(res.Extra) {
				fmt.Fprintf(w, " %s=%s", k, num(res.Extra[k]))
			}
			if res.Note != "" {
				fmt.Fprintf(w, " (%s)", res.Note)
			}
			fmt.Fprintln(w)
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "%sFAILED %s: %s\n", bullet, e.Scenario, e.Error)
	}
}

// Comparison is a shardlease row's baselines: the default api.Lock row
// and the tuned one, either nil when the run has none.
type Comparison struct {
	Baseline, Tuned *Result
}

// Compare finds sl's baselines among rs. Rows of one comparison share
// scenario, metric and policy; the default baseline runs with api.Lock's
// own settings whatever shardlease's policy, so it is matched by scenario
// and metric alone, preferring one of sl's policy.
func Compare(rs []Result, sl Result) Comparison {
	var c Comparison
	for i, r := range rs {
		if r.Scenario != sl.Scenario || r.Metric != sl.Metric {
			continue
		}
		switch {
		case r.System == SystemTuned && r.Policy == sl.Policy:
			c.Tuned = &rs[i]
		case r.System == SystemBaseline && (c.Baseline == nil || r.Policy == sl.Policy):
			c.Baseline = &rs[i]
		}
	}
	return c
}

// tableOrder is rs in order, except that each baseline row moves up to
// just after the first shardlease row compared with it.
func tableOrder(rs []Result) []Result {
	placed := map[*Result]bool{}
	var out []Result
	for i := range rs {
		r := &rs[i]
		if placed[r] {
			continue
		}
		if r.System == SystemBaseline || r.System == SystemTuned {
			if firstComparedWith(rs, r) != nil {
				continue // printed after that shardlease row
			}
		}
		out = append(out, *r)
		placed[r] = true
		if r.System == SystemShardlease {
			c := Compare(rs, *r)
			for _, b := range []*Result{c.Baseline, c.Tuned} {
				if b != nil && !placed[b] {
					out = append(out, *b)
					placed[b] = true
				}
			}
		}
	}
	return out
}

// firstComparedWith returns the first shardlease row of rs whose
// comparison includes b, or nil.
func firstComparedWith(rs []Result, b *Result) *Result {
	for i, r := range rs {
		if r.System != SystemShardlease {
			continue
		}
		if c := Compare(rs, r); c.Baseline == b || c.Tuned == b {
			return &rs[i]
		}
	}
	return nil
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " (" + u + ")"
}

// num prints a figure with about four significant digits.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'g', 3, 64)
}

func metString(m *bool) string {
	switch {
	case m == nil:
		return ""
	case *m:
		return "yes"
	default:
		return "NO"
	}
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
