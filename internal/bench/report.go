package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Report is what a run prints: with --json, one document.
type Report struct {
	Machine Machine   `json:"machine"`
	Trials  int       `json:"trials"`
	Small   bool      `json:"small"`
	Started time.Time `json:"started"`
	// Commit is the source's revision, when the build or git says.
	Commit    string          `json:"commit,omitempty"`
	Scenarios []ScenarioRun   `json:"scenarios,omitempty"`
	Results   []Result        `json:"results"`
	Errors    []ScenarioError `json:"errors,omitempty"`
}

// ScenarioRun is how long one scenario of the run took, and, in a
// document's JSON updated by a later run of some scenarios (docsmerge.go),
// which run measured it.
type ScenarioRun struct {
	Name    string    `json:"name"`
	Seconds float64   `json:"seconds"`
	Commit  string    `json:"commit,omitempty"`
	Started time.Time `json:"started,omitzero"`
}

// ScenarioError is a scenario that failed, and why.
type ScenarioError struct {
	Scenario string `json:"scenario"`
	Error    string `json:"error"`
}

// Machine is where the figures were measured.
type Machine struct {
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

// DescribeMachine is this machine and the run's agent a.
func DescribeMachine(a *Agent) Machine {
	m := Machine{
		Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version(),
		ConsulVersion: a.Version, ConsulMode: a.Mode, ConsulAddress: a.Config.Address,
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

// WriteJSON writes the report as one indented JSON document (run.json's
// format).
func (r Report) WriteJSON(w io.Writer) {
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

// Missed returns the rows that missed their goals.
func (r Report) Missed() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Met != nil && !*res.Met {
			out = append(out, res)
		}
	}
	return out
}

// Check prints every row that missed its goal and every scenario that
// failed, and reports whether all goals were met and nothing failed.
func (r Report) Check(w io.Writer) bool {
	missed := r.Missed()
	for _, m := range missed {
		fmt.Fprintf(w, "shardbench: goal missed: %s / %s / %s: goal %s, %s\n", m.Scenario, m.System, m.Metric, m.Goal, figures(m))
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "shardbench: scenario failed: %s: %s\n", e.Scenario, e.Error)
	}
	return len(missed) == 0 && len(r.Errors) == 0
}

// summary is one line on where a run ran.
func (m Machine) summary(trials int, small bool) string {
	return fmt.Sprintf("%d trials%s on %d cores (%s), %s GiB, %s %s, %s; Consul %s: %s",
		trials, map[bool]string{true: " (--small)", false: ""}[small], m.Cores, m.CPU,
		m.MemoryGiB(), m.OS, m.Kernel, m.GoVersion, m.ConsulVersion, m.ConsulMode)
}

// MemoryGiB is the machine's memory as printed.
func (m Machine) MemoryGiB() string {
	return strconv.FormatFloat(float64(m.MemoryBytes)/(1<<30), 'f', 1, 64)
}
