package bench

import (
	"fmt"
	"math"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// Result is one row: one metric of one system in one scenario. Its JSON is
// docs/bench/run.json's row.
type Result struct {
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
	Trace *LoadTrace `json:"trace,omitempty"`
}

// The systems compared side by side. The two baselines are api.Lock from
// github.com/hashicorp/consul/api: with every option at its default, and
// tuned as a competent Consul user would in an afternoon (one session per
// worker bound to a TTL check, the row's TTL and lock-delay, a monitor
// that stops work when a lock is lost, a simple spread).
const (
	SystemShardlease = "shardlease"
	SystemBaseline   = "baseline"
	SystemTuned      = "baseline-tuned"
)

// The names of the policies in a row's Policy: shardlease's two (which the
// tuned baseline is tuned to), and the default baseline's settings.
const (
	PolicyFast    = "shard.FastPolicy"
	PolicyDefault = "shard.DefaultPolicy"
	// PolicySessionTTL is shard.SessionTTLPolicy, on Consul's session-TTL
	// liveness.
	PolicySessionTTL = "shard.SessionTTLPolicy"
	PolicyDefaults   = "api.Lock defaults"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of samples by the
// nearest-rank method: the smallest sample with at least p % of the samples
// at or below it. With fewer than 100 samples p99 is the largest one. No
// samples give NaN.
func Percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Measured makes a row from one sample per trial.
func Measured(scenario, system, metric, unit string, samples []float64) Result {
	return Result{
		Scenario: scenario, System: system, Metric: metric, Unit: unit,
		Trials: len(samples), P50: Percentile(samples, 50), P99: Percentile(samples, 99), Max: Percentile(samples, 100),
	}
}

// WithGoal states the row's goal and whether it was met.
func (r Result) WithGoal(goal string, met bool) Result {
	r.Goal, r.Met = goal, &met
	return r
}

// With adds an extra figure.
func (r Result) With(name string, v float64) Result {
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	r.Extra[name] = v
	return r
}

// WithNote adds a note to the row's, after a "; " if it has one.
func (r Result) WithNote(note string) Result {
	if r.Note != "" {
		note = r.Note + "; " + note
	}
	r.Note = note
	return r
}

// WithPolicy adds the lease policy the shardlease workers ran with to a
// row: its name, its four numbers as extra figures, and a note showing
// that it meets both rules of shard.LeasePolicy, the second of which
// (lock-delay ≥ ttl − pause, the step-down deadline) sets how long a
// crashed worker's shards stay closed after Consul frees them.
func (r Result) WithPolicy(name string, p shard.LeasePolicy) Result {
	r.Policy = name
	r = r.With("check_ttl_s", p.TTL.Seconds()).With("renew_s", p.RenewEvery.Seconds()).
		With("pause_budget_s", p.PauseBudget.Seconds()).With("lock_delay_s", p.EffectiveLockDelay().Seconds())
	return r.WithNote(fmt.Sprintf("policy %s: 2 × renew %v + pause %v = %v ≤ ttl %v; lock-delay %v ≥ ttl − pause = %v",
		name, p.RenewEvery, p.PauseBudget, p.Need(), p.TTL, p.EffectiveLockDelay(), p.MinLockDelay()))
}
