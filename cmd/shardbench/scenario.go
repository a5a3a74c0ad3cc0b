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
	Scenario string  `json:"scenario"`
	System   string  `json:"system"` // "shardlease", "baseline" (api.Lock), or e.g. "consul" / a backend name
	Metric   string  `json:"metric"`
	Unit     string  `json:"unit"`
	Trials   int     `json:"trials"`
	P50      float64 `json:"p50"`
	P99      float64 `json:"p99"`
	Max      float64 `json:"max"`
	// Policy names the lease settings the row ran with ("shard.FastPolicy",
	// "api.Lock defaults", …): rows of one comparison share scenario,
	// metric and policy.
	Policy string             `json:"policy,omitempty"`
	Goal   string             `json:"goal,omitempty"` // e.g. "p99 <= 3s"
	Met    *bool              `json:"met,omitempty"`
	Extra  map[string]float64 `json:"extra,omitempty"`
	// Note explains a figure the numbers alone would mislead about, e.g.
	// "never converged: the figure is the observation window".
	Note string `json:"note,omitempty"`
	// Trace is a fleet's worker load over time (skewed-load), for its plot.
	Trace *loadTrace `json:"trace,omitempty"`
}

// The systems compared side by side. The two baselines are api.Lock from
// github.com/hashicorp/consul/api: with every option at its default, and
// tuned as a competent Consul user would in an afternoon (one session per
// worker bound to a TTL check, the row's TTL and lock-delay, a monitor
// that stops work when a lock is lost, a simple spread).
const (
	systemShardlease = "shardlease"
	systemBaseline   = "baseline"
	systemTuned      = "baseline-tuned"
)

type benchScenario struct {
	name, summary string
	run           func(ctx context.Context, env *benchEnv) ([]result, error)
}

// scenarios lists every scenario, in the order `--scenario all` runs and
// prints them: the ownership rows first, then load and scale, then the
// in-process ones.
var scenarios = []benchScenario{
	{name: "crash-failover", run: crashFailover,
		summary: "one of 12 worker processes over 128 shards is kill -9'd, for shardlease and the tuned api.Lock baseline on FastPolicy and DefaultPolicy and for api.Lock's defaults (≥ 20 trials): time until all its shards have new handlers running; also the assignor's worker, at 12 × 128 and 100 × 10,000"},
	{name: "graceful-handoff", run: gracefulHandoff,
		summary: "one of 12 worker processes over 128 shards gets SIGTERM, the same systems and policies (≥ 20 trials; shardlease also one of 100 over 10,000): time until all its shards have new handlers running"},
	{name: "scale-out", run: scaleOut,
		summary: "a 13th worker joins 12 over 128 shards, shardlease and the tuned baseline on both policies and api.Lock's defaults (shardlease also a 101st, 100 over 10,000): shards moved, time until max−min ≤ 1, bytes read"},
	{name: "rolling-restart", run: rollingRestart,
		summary: "each of 12 `shardd worker` processes over 128 shards is restarted in turn (SIGTERM, 3 s down, the same --id), with --rejoin-grace 10s and without (≥ 3 trials): shard moves, the longest time a shard has no handler, max−min"},
	{name: "coordinator-load", run: coordinatorLoad,
		summary: "Consul HTTP requests per worker per second in steady state, 12 workers at 128 and 4096 shards and 100 at 10,000 (baseline: 12 at 128 and 512); the assignor's worker's own rate"},
	{name: "cold-start", run: coldStartScenario,
		summary: "100 workers × 10,000 shards start together: time until all owned with max−min ≤ 1, failed ÷ successful acquires (also 100 × 1,000; all three systems at 12 × 128)"},
	{name: "lock-ops", run: lockOps,
		summary: "raw Consul lock operations per second on the run's agent: one KV acquire per request, and 64 or 128 per /v1/txn"},
	{name: "commit-throughput", run: commitThroughput,
		summary: "offset commits/s per backend (memory, bolt, consul, postgres), fenced vs the same write unfenced, single and batched"},
	{name: "assignor-step", run: assignorStep,
		summary: "rebalance.Step in-process at 1,000 workers × 100,000 shards: cold, steady and one join (no Consul; system rebalance)"},
	{name: "stuck-worker", run: stuckWorker,
		summary: "one of 12 workers over 128 shards is live but never acquires, for 3 minutes a trial: unowned shard-time, owner changes per shard"},
	{name: "stream-e2e", run: streamE2E,
		summary: "examples/jetstream's pipeline, a nats-server process → ordered consumers → PostgreSQL, 12 workers × 128 partitions: events/s with FencedTx against the same transaction unfenced, and the latency from publish to committed effect"},
	{name: "skewed-load", run: skewedLoad,
		summary: "a load-aware fleet (10 % band) and a count-based one, 12 workers × 128 shards each, side by side: Zipf(1.1) loads, then ±20 % noise every 10 s for 10 minutes, one shard tripled at minute 5: max worker load ÷ mean, time to converge, moves per minute, time back in the band"},
}

// findScenario returns the scenario of that name.
func findScenario(name string) (benchScenario, bool) {
	i := slices.IndexFunc(scenarios, func(s benchScenario) bool { return s.name == name })
	if i < 0 {
		return benchScenario{}, false
	}
	return scenarios[i], true
}

// selectScenarios resolves --scenario: "all", or comma-separated names.
func selectScenarios(spec string) ([]benchScenario, error) {
	if spec == "all" {
		return scenarios, nil
	}
	var out []benchScenario
	for _, name := range strings.Split(spec, ",") {
		s, ok := findScenario(strings.TrimSpace(name))
		if !ok {
			names := make([]string, 0, len(scenarios))
			for _, s := range scenarios {
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
		Trials: len(samples), P50: percentile(samples, 50), P99: percentile(samples, 99), Max: percentile(samples, 100),
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
