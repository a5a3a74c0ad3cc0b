package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/hashicorp/consul/api"
)

// benchEnv is what every scenario gets.
type benchEnv struct {
	consul *api.Config // the agent all scenarios of a run share (Address set)
	trials int         // repetitions per measurement (--trials)
	small  bool        // --small: CI smoke sizes
	log    io.Writer   // progress lines (stderr)
}

// logf writes one progress line.
func (e *benchEnv) logf(format string, args ...any) {
	fmt.Fprintf(e.log, format+"\n", args...)
}

// result is one row: one metric of one system in one scenario.
type result struct {
	Scenario string             `json:"scenario"`
	System   string             `json:"system"` // "shardlease", "baseline" (api.Lock), or e.g. "consul" / a backend name
	Metric   string             `json:"metric"`
	Unit     string             `json:"unit"`
	Trials   int                `json:"trials"`
	P50      float64            `json:"p50"`
	P99      float64            `json:"p99"`
	Goal     string             `json:"goal,omitempty"` // e.g. "p99 <= 3s"
	Met      *bool              `json:"met,omitempty"`
	Extra    map[string]float64 `json:"extra,omitempty"`
	// Note explains a figure the numbers alone would mislead about, e.g.
	// "never converged: the figure is the observation window".
	Note string `json:"note,omitempty"`
}

// The systems compared side by side.
const (
	systemShardlease = "shardlease"
	systemBaseline   = "baseline"
)

type benchScenario struct {
	name, summary string
	run           func(ctx context.Context, env *benchEnv) ([]result, error)
}

// registry holds every scenario, filled by register from the scenario
// files' init functions.
var registry = map[string]benchScenario{}

// scenarioOrder is the order `--scenario all` runs and prints them in: the
// table of issue 7. Scenarios not listed here follow, by name.
var scenarioOrder = []string{
	"crash-failover", "graceful-handoff", "scale-out",
	"coordinator-load", "cold-start", "lock-ops", "commit-throughput",
}

// register adds a scenario; it is called from init() in each scenario file.
// A duplicate name is a programming error caught by the first run.
func register(s benchScenario) {
	if _, dup := registry[s.name]; dup || s.name == "" || s.name == "all" || s.run == nil {
		panic(fmt.Sprintf("shardbench: bad or duplicate scenario %q", s.name))
	}
	registry[s.name] = s
}

// orderedScenarios returns every registered scenario in scenarioOrder.
func orderedScenarios() []benchScenario {
	rank := func(name string) int {
		if i := slices.Index(scenarioOrder, name); i >= 0 {
			return i
		}
		return len(scenarioOrder)
	}
	out := make([]benchScenario, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b benchScenario) int {
		if ra, rb := rank(a.name), rank(b.name); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// selectScenarios resolves --scenario: "all", or comma-separated names.
func selectScenarios(spec string) ([]benchScenario, error) {
	all := orderedScenarios()
	if spec == "all" {
		return all, nil
	}
	var out []benchScenario
	for _, name := range strings.Split(spec, ",") {
		s, ok := registry[strings.TrimSpace(name)]
		if !ok {
			names := make([]string, 0, len(all))
			for _, s := range all {
				names = append(names, s.name)
			}
			return nil, fmt.Errorf("--scenario %q: unknown scenario %q; want all or some of %s",
				spec, strings.TrimSpace(name), strings.Join(names, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

// percentile returns the p-th percentile (0 < p ≤ 100) of samples by the
// nearest-rank method: the smallest sample with at least p % of the samples
// at or below it. With fewer than 100 samples p99 is the largest one. No
// samples give NaN.
func percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// measured makes a row from one sample per trial.
func measured(scenario, system, metric, unit string, samples []float64) result {
	return result{
		Scenario: scenario, System: system, Metric: metric, Unit: unit,
		Trials: len(samples), P50: percentile(samples, 50), P99: percentile(samples, 99),
	}
}

// withGoal states the row's goal and whether it was met.
func (r result) withGoal(goal string, met bool) result {
	r.Goal, r.Met = goal, &met
	return r
}

// with adds an extra figure.
func (r result) with(name string, v float64) result {
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	r.Extra[name] = v
	return r
}

// withNote adds a note to the row's, after a "; " if it has one.
func (r result) withNote(note string) result {
	if r.Note != "" {
		note = r.Note + "; " + note
	}
	r.Note = note
	return r
}
