package assignorstep

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/rebalance"
)

// SystemRebalance names rows measured in-process on package rebalance.
const SystemRebalance = "rebalance"

// Name is the scenario's name on the command line and in its rows.
const Name = "assignor-step"

// Params are the fleet Step is timed on and how many runs of each state
// one trial times.
type Params struct {
	Workers, Shards, RunsPerTrial int
}

// Sizes are assignor-step's at full size (the size of its goals) and for a
// smoke run.
var Sizes = bench.Sizes[Params]{
	Full:  Params{Workers: 1000, Shards: 100_000, RunsPerTrial: 10},
	Small: Params{Workers: 50, Shards: 2000, RunsPerTrial: 1},
}

// Scenario is assignor-step.
var Scenario = bench.Declare(Name,
	"rebalance.Step in-process at 1,000 workers × 100,000 shards, without zones, in 3, and in 3 with 1,000 placement rules: cold, steady, one join and one leave (no Consul; system rebalance)",
	Sizes, run)

func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	var rows []bench.Result
	for _, c := range []struct{ zones, rules int }{{0, 0}, {3, 0}, {3, RulesAtFull * p.Shards / Sizes.Full.Shards}} {
		r, err := runZones(ctx, env, p, c.zones, c.rules)
		rows = append(rows, r...)
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// RulesAtFull is how many placement rules the rules rows carry at full
// size (issue 30's 1,000); a smoke run scales it with the shards.
const RulesAtFull = 1000

// runZones times the four states with members in zones (0: none) under
// rules placement rules (stepRules).
func runZones(ctx context.Context, env *bench.Env, p Params, zones, rules int) ([]bench.Result, error) {
	workers, shards, per := p.Workers, p.Shards, p.RunsPerTrial
	began := time.Now()
	cold, steady, join, leave, err := stepStates(workers, shards, zones, rules)
	if err != nil {
		return nil, err
	}
	in := ""
	if zones > 0 {
		in = fmt.Sprintf(", %d zones", zones)
	}
	if rules > 0 {
		in += fmt.Sprintf(", %d rules", rules)
	}
	env.Logf("shardbench: assignor-step: states of %d workers × %d shards%s built in %v; %d runs of each",
		workers, shards, in, time.Since(began).Round(time.Millisecond), per*env.Trials)
	var rows []bench.Result
	for _, c := range []struct {
		name, what string
		s          rebalance.State
		goal       time.Duration
	}{
		{"cold", "cold (nothing held or assigned)", cold, 500 * time.Millisecond},
		{"steady", "steady (balanced, nothing to write)", steady, 20 * time.Millisecond},
		{"join", "one join (a member more than steady)", join, 100 * time.Millisecond},
		{"leave", "one leave (a member fewer than steady)", leave, 100 * time.Millisecond},
	} {
		var ms, allocMB []float64
		var d rebalance.Decision
		for range per * env.Trials {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			var took time.Duration
			var mb float64
			if d, took, mb, err = timeStep(c.s); err != nil {
				return rows, fmt.Errorf("%s%s: %w", c.name, in, err)
			}
			ms, allocMB = append(ms, took.Seconds()*1000), append(allocMB, mb)
		}
		row := bench.Measured("assignor-step", SystemRebalance, fmt.Sprintf("rebalance.Step, %s, %d workers × %d shards%s", c.what, workers, shards, in), "ms", ms).
			With("alloc_mb_p50", bench.Percentile(allocMB, 50)).With("keys_written", float64(len(d.Assign))).With("moves", float64(len(d.Moves))).
			With("runs_per_trial", float64(per))
		row = row.WithGoal(fmt.Sprintf("p99 <= %v", c.goal), row.P99 <= float64(c.goal.Milliseconds()))
		env.Logf("shardbench: assignor-step %s%s: p50 %.2f ms, p99 %.2f ms over %d runs; %d keys written, %d moves",
			c.name, in, row.P50, row.P99, len(ms), len(d.Assign), len(d.Moves))
		rows = append(rows, row)
	}
	return rows, nil
}

// timeStep runs Step once on s, after a collection so that no run pays
// for the garbage of the one before, and returns the decision, how long
// Step took and the MB it allocated.
func timeStep(s rebalance.State) (rebalance.Decision, time.Duration, float64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	d, err := rebalance.Step(s, rebalance.Policy{})
	took := time.Since(t0)
	runtime.ReadMemStats(&after)
	return d, took, float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20), err
}
