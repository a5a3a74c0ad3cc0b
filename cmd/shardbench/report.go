package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report is what a run prints: with --json, one document.
type report struct {
	Machine machine   `json:"machine"`
	Trials  int       `json:"trials"`
	Small   bool      `json:"small"`
	Started time.Time `json:"started"`
	// Commit is the source's revision, when the build or git says.
	Commit    string          `json:"commit,omitempty"`
	Scenarios []scenarioRun   `json:"scenarios,omitempty"`
	Results   []result        `json:"results"`
	Errors    []scenarioError `json:"errors,omitempty"`
}

// scenarioRun is how long one scenario of the run took, and, in a
// document's JSON updated by a later run of some scenarios (docsmerge.go),
// which run measured it.
type scenarioRun struct {
	Name    string    `json:"name"`
	Seconds float64   `json:"seconds"`
	Commit  string    `json:"commit,omitempty"`
	Started time.Time `json:"started,omitzero"`
}

type scenarioError struct {
	Scenario string `json:"scenario"`
	Error    string `json:"error"`
}

// machine is where the figures were measured.
type machine struct {
	Cores         int    `json:"cores"`
	GOMAXPROCS    int    `json:"gomaxprocs"`
	CPU           string `json:"cpu,omitempty"`
	MemoryBytes   uint64 `json:"memory_bytes,omitempty"`
	Kernel        string `json:"kernel,omitempty"`
	OS            string `json:"os"`
	GoVersion     string `json:"go_version"`
	ConsulVersion string `json:"consul_version"`
	ConsulMode    string `json:"consul_mode"`
	ConsulAddress string `json:"consul_address"`
}

func describeMachine(a *benchAgent) machine {
	m := machine{
		Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version(),
		ConsulVersion: a.version, ConsulMode: a.mode, ConsulAddress: a.config.Address,
	}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseUint(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		m.MemoryBytes = kb * 1024
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// procField returns the value of the first "name: value" line of a /proc
// file, or "" (not Linux, or no such line).
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (r report) writeJSON(w io.Writer) {
	for i := range r.Results {
		// JSON has no NaN: a percentile of no samples is reported as 0
		// with a note rather than failing the whole document.
		for _, v := range []*float64{&r.Results[i].P50, &r.Results[i].P99, &r.Results[i].Max} {
			if math.IsNaN(*v) || math.IsInf(*v, 0) {
				*v = 0
				r.Results[i].Note = strings.TrimPrefix(r.Results[i].Note+"; no samples", "; ")
			}
		}
		for name, v := range r.Results[i].Extra { // e.g. a p50 over trials that never converged
			if math.IsNaN(v) || math.IsInf(v, 0) {
				delete(r.Results[i].Extra, name)
				r.Results[i].Note = strings.TrimPrefix(r.Results[i].Note+"; "+name+": no value", "; ")
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
	}
}

// writeTable prints one line per row, each shardlease row followed by
// the baseline rows it is compared with and its ratios to them.
func (r report) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, line := range r.tableLines() {
		fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
	}
	tw.Flush()
	r.writeNotes(w, "  ")
	fmt.Fprintf(w, "\n%s\n", r.Machine.summary(r.Trials, r.Small))
}

// writeMarkdown prints the same table as Markdown, for docs/benchmarks.md.
func (r report) writeMarkdown(w io.Writer) {
	for i, line := range r.tableLines() {
		fmt.Fprintf(w, "| %s |\n", strings.Join(line, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(line)))
		}
	}
	fmt.Fprintln(w)
	r.writeNotes(w, "- ")
	fmt.Fprintf(w, "\n%s\n", r.Machine.summary(r.Trials, r.Small))
}

// tableLines are the table's header and rows: the rows in the results'
// order, except that a baseline row follows the first shardlease row it is
// compared with, whose ratio columns give shardlease ÷ that baseline for
// p50, p99 and max.
func (r report) tableLines() [][]string {
	lines := [][]string{{"scenario", "metric", "system", "policy", "trials", "p50", "p99", "max",
		"÷ baseline (p50 / p99 / max)", "÷ baseline-tuned (p50 / p99 / max)", "goal", "met"}}
	for _, res := range tableOrder(r.Results) {
		line := []string{res.Scenario, res.Metric + unitSuffix(res.Unit), res.System, res.Policy, strconv.Itoa(res.Trials),
			num(res.P50), num(res.P99), num(res.Max), "", "", res.Goal, metString(res.Met)}
		if res.System == systemShardlease {
			c := compare(r.Results, res)
			line[8], line[9] = ratios(res, c.baseline), ratios(res, c.tuned)
		}
		lines = append(lines, line)
	}
	return lines
}

// ratios is a table cell: a's p50, p99 and max each divided by b's, or
// "–" without b.
func ratios(a result, b *result) string {
	if b == nil {
		return "–"
	}
	return ratio(a.P50, b.P50) + " / " + ratio(a.P99, b.P99) + " / " + ratio(a.Max, b.Max)
}

// writeNotes prints each row's extra figures and note, and the failures.
func (r report) writeNotes(w io.Writer, bullet string) {
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

// missed returns the rows that missed their goals.
func (r report) missed() []result {
	var out []result
	for _, res := range r.Results {
		if res.Met != nil && !*res.Met {
			out = append(out, res)
		}
	}
	return out
}

// check prints every row that missed its goal and every scenario that
// failed, and reports whether all goals were met and nothing failed.
func (r report) check(w io.Writer) bool {
	missed := r.missed()
	for _, m := range missed {
		fmt.Fprintf(w, "shardbench: goal missed: %s / %s / %s: goal %s, %s\n", m.Scenario, m.System, m.Metric, m.Goal, figures(m))
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "shardbench: scenario failed: %s: %s\n", e.Scenario, e.Error)
	}
	return len(missed) == 0 && len(r.Errors) == 0
}

// summary is one line on where a run ran.
func (m machine) summary(trials int, small bool) string {
	return fmt.Sprintf("%d trials%s on %d cores (%s), %s GiB, %s %s, %s; Consul %s: %s",
		trials, map[bool]string{true: " (--small)", false: ""}[small], m.Cores, m.CPU,
		m.memoryGiB(), m.OS, m.Kernel, m.GoVersion, m.ConsulVersion, m.ConsulMode)
}

// memoryGiB is the machine's memory as printed.
func (m machine) memoryGiB() string {
	return strconv.FormatFloat(float64(m.MemoryBytes)/(1<<30), 'f', 1, 64)
}

// comparison is a shardlease row's baselines: the default api.Lock row
// and the tuned one, either nil when the run has none.
type comparison struct {
	baseline, tuned *result
}

// compare finds sl's baselines among rs. Rows of one comparison share
// scenario, metric and policy; the default baseline runs with api.Lock's
// own settings whatever shardlease's policy, so it is matched by scenario
// and metric alone, preferring one of sl's policy.
func compare(rs []result, sl result) comparison {
	var c comparison
	for i, r := range rs {
		if r.Scenario != sl.Scenario || r.Metric != sl.Metric {
			continue
		}
		switch {
		case r.System == systemTuned && r.Policy == sl.Policy:
			c.tuned = &rs[i]
		case r.System == systemBaseline && (c.baseline == nil || r.Policy == sl.Policy):
			c.baseline = &rs[i]
		}
	}
	return c
}

// tableOrder is rs in order, except that each baseline row moves up to
// just after the first shardlease row compared with it.
func tableOrder(rs []result) []result {
	placed := map[*result]bool{}
	var out []result
	for i := range rs {
		r := &rs[i]
		if placed[r] {
			continue
		}
		if r.System == systemBaseline || r.System == systemTuned {
			if firstComparedWith(rs, r) != nil {
				continue // printed after that shardlease row
			}
		}
		out = append(out, *r)
		placed[r] = true
		if r.System == systemShardlease {
			c := compare(rs, *r)
			for _, b := range []*result{c.baseline, c.tuned} {
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
func firstComparedWith(rs []result, b *result) *result {
	for i, r := range rs {
		if r.System != systemShardlease {
			continue
		}
		if c := compare(rs, r); c.baseline == b || c.tuned == b {
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
