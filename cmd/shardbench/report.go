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
	Machine machine         `json:"machine"`
	Trials  int             `json:"trials"`
	Small   bool            `json:"small"`
	Started time.Time       `json:"started"`
	Results []result        `json:"results"`
	Errors  []scenarioError `json:"errors,omitempty"`
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
		for _, v := range []*float64{&r.Results[i].P50, &r.Results[i].P99} {
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

// writeTable prints one line per scenario and metric: shardlease and the
// baseline side by side with the ratio shardlease/baseline of their p50
// and p99, or, for a metric only one system has, that system alone.
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

// tableLines are the table's header and rows.
func (r report) tableLines() [][]string {
	lines := [][]string{{"scenario", "metric", "system", "p50", "p99", "baseline p50", "baseline p99", "ratio p50", "ratio p99", "trials", "goal", "met"}}
	for _, row := range pairRows(r.Results) {
		a, b := row.first, row.baseline
		line := []string{a.Scenario, a.Metric + unitSuffix(a.Unit), a.System, num(a.P50), num(a.P99), "–", "–", "–", "–", strconv.Itoa(a.Trials), a.Goal, metString(a.Met)}
		if b != nil {
			line[5], line[6] = num(b.P50), num(b.P99)
			line[7], line[8] = ratio(a.P50, b.P50), ratio(a.P99, b.P99)
		}
		lines = append(lines, line)
	}
	return lines
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

// summary is one line on where a run ran.
func (m machine) summary(trials int, small bool) string {
	return fmt.Sprintf("%d trials%s on %d cores (%s), %.1f GiB, %s %s, %s; Consul %s: %s",
		trials, map[bool]string{true: " (--small)", false: ""}[small], m.Cores, m.CPU,
		float64(m.MemoryBytes)/(1<<30), m.OS, m.Kernel, m.GoVersion, m.ConsulVersion, m.ConsulMode)
}

// pairedRow is a table line: a row and, when it is shardlease's, the
// baseline row of the same scenario and metric.
type pairedRow struct {
	first    result
	baseline *result
}

// pairRows keeps the results' order, folding each baseline row into the
// shardlease row with the same scenario and metric.
func pairRows(rs []result) []pairedRow {
	key := func(r result) string { return r.Scenario + "\x00" + r.Metric }
	hasShardlease := map[string]bool{}
	for _, r := range rs {
		if r.System == systemShardlease {
			hasShardlease[key(r)] = true
		}
	}
	baselines := map[string]*result{}
	for i, r := range rs {
		if r.System == systemBaseline && hasShardlease[key(r)] {
			baselines[key(r)] = &rs[i]
		}
	}
	var out []pairedRow
	for _, r := range rs {
		switch {
		case r.System == systemShardlease:
			out = append(out, pairedRow{first: r, baseline: baselines[key(r)]})
		case r.System == systemBaseline && hasShardlease[key(r)]:
			// printed with its shardlease row
		default:
			out = append(out, pairedRow{first: r})
		}
	}
	return out
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
