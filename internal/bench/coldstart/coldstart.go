package coldstart

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/bench/steady"
	"github.com/shardlease/shardlease/shard"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "cold-start"

// Params are cold-start's fleets and bound.
type Params struct {
	// Goal is the goal's size for shardlease; Fewer the goal's workers
	// over a tenth of the shards, which shows where this machine's limit
	// lies; Common the size every system runs.
	Goal, Fewer, Common fleet.Size
	// Within bounds one shardlease cold start; past it the trial counts as
	// not converged and the figure is the bound.
	Within time.Duration
	// Quick runs the default baseline quick (fleet.Shape.Quick).
	Quick bool
}

// Sizes are cold-start's at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full: Params{Goal: fleet.Large, Fewer: fleet.Size{Workers: 100, Shards: 1000}, Common: fleet.Common, Within: 2 * time.Minute},
	Small: Params{Goal: fleet.LargeSmall, Fewer: fleet.Size{Workers: 10, Shards: 50}, Common: fleet.CommonSmall, Within: 30 * time.Second,
		Quick: true},
}

// Scenario is cold-start.
var Scenario = bench.Declare(Name,
	"100 workers × 10,000 shards start together: time until all owned with max−min ≤ 1, failed ÷ successful acquires (also 100 × 1,000; all three systems at 12 × 128)",
	Sizes, run)

// The goals at the large size (docs/benchmarks.md, "Cold start at scale").
const (
	coldGoalSeconds = 5.0
	coldGoalFailed  = 0.01
)

func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	goal, fewer, common := p.Goal, p.Fewer, p.Common
	var rows []bench.Result
	for _, size := range []fleet.Size{goal, fewer, common} {
		rs, err := slColdStart(ctx, env, size, size == goal, p.Within)
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("shardlease, %d × %d: %w", size.Workers, size.Shards, err)
		}
	}
	// Both baselines at the common size: the default one, and the tuned
	// one on the policy shardlease's cold starts run.
	for _, system := range []string{bench.SystemBaseline, bench.SystemTuned} {
		rs, err := blColdStart(ctx, env, system, common, p.Quick)
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("%s, %d × %d: %w", system, common.Workers, common.Shards, err)
		}
	}
	return rows, nil
}

// slColdStart runs env.Trials cold starts of shardlease, each a fresh fleet
// on a fresh prefix. A trial that does not converge within within counts
// with that bound as its time, and ends the size's trials: each such trial
// costs minutes and says the same.
func slColdStart(ctx context.Context, env *bench.Env, size fleet.Size, withGoal bool, within time.Duration) ([]bench.Result, error) {
	o := steady.Options{
		Consul: env.CoordConfig("shardbench/cold-start"), Workers: size.Workers,
		Policy: shard.DefaultPolicy, Converge: within,
	}
	var secs, ratios, calls, moves []float64
	converged, notes := 0, ""
	for trial := range env.Trials {
		f, r, err := steady.ColdStart(ctx, o, size.Shards, env.Log)
		switch {
		case err == nil:
			converged++
			f.Close()
		case errors.Is(err, steady.ErrNotConverged) && ctx.Err() == nil:
			r.ColdStartSeconds = o.Converge.Seconds()
			notes = err.Error()
		default:
			return nil, err
		}
		granted := r.ShardsAsked - r.FailedAcquires
		ratio := float64(r.FailedAcquires) / float64(max(granted, 1))
		secs, ratios = append(secs, r.ColdStartSeconds), append(ratios, ratio)
		calls, moves = append(calls, float64(r.AcquireCalls)), append(moves, float64(r.Moves))
		env.Logf("shardbench: cold-start shardlease %d × %d trial %d: %.2fs; %d acquire calls asked for %d shards, %d not granted (%.4f per granted), %d errors, %d hand-offs, %d requests",
			size.Workers, size.Shards, trial+1, r.ColdStartSeconds, r.AcquireCalls, r.ShardsAsked, r.FailedAcquires, ratio, r.AcquireErrors, r.Moves, r.ColdRequests)
		if err != nil {
			env.Logf("shardbench: cold-start shardlease %d × %d: %v; no more trials at this size", size.Workers, size.Shards, err)
			break
		}
	}
	timeRow := bench.Measured(Name, bench.SystemShardlease, size.Metric("time until all owned (shardlease: and max−min <= 1)"), "s", secs).
		With("workers", float64(size.Workers)).With("shards", float64(size.Shards)).
		With("acquire_calls_p50", bench.Percentile(calls, 50)).With("handoffs_p50", bench.Percentile(moves, 50))
	failRow := bench.Measured(Name, bench.SystemShardlease, size.Metric("failed ÷ successful acquire attempts"), "ratio", ratios)
	if converged < len(secs) {
		timeRow = timeRow.With("converged_trials", float64(converged))
		timeRow.Note = fmt.Sprintf("converged in %d of %d trials; the others count as the %v bound (last: %s)", converged, len(secs), o.Converge, notes)
		failRow.Note = "counted until the bound in the trials that did not converge"
	}
	timeRow.Policy, failRow.Policy = bench.PolicyDefault, bench.PolicyDefault
	if withGoal {
		timeRow = timeRow.WithGoal(fmt.Sprintf("p99 <= %.0fs", coldGoalSeconds), converged == len(secs) && timeRow.P99 <= coldGoalSeconds)
		failRow = failRow.WithGoal(fmt.Sprintf("p99 <= %.2f", coldGoalFailed), converged == len(secs) && failRow.P99 <= coldGoalFailed)
	}
	return []bench.Result{timeRow, failRow}, nil
}

// blColdStart runs env.Trials cold starts of a baseline (the tuned one on
// shard.DefaultPolicy). Neither balances, so its time is until every
// shard is locked, and the row says how far from balanced that was.
func blColdStart(ctx context.Context, env *bench.Env, system string, size fleet.Size, quick bool) ([]bench.Result, error) {
	var secs, ratios, spreads []float64
	for trial := range env.Trials {
		s, ratio, spread, err := blColdTrial(ctx, env, system, size, quick)
		if err != nil {
			return nil, err
		}
		secs, ratios, spreads = append(secs, s), append(ratios, ratio), append(spreads, float64(spread))
		env.Logf("shardbench: cold-start %s %d × %d trial %d: every shard locked after %.2fs, max−min %d; %.4f refused acquires per granted",
			system, size.Workers, size.Shards, trial+1, s, spread, ratio)
	}
	timeRow := bench.Measured(Name, system, size.Metric("time until all owned (shardlease: and max−min <= 1)"), "s", secs).
		With("workers", float64(size.Workers)).With("shards", float64(size.Shards)).
		With("max_minus_min_p50", bench.Percentile(spreads, 50))
	timeRow.Note = "the baselines never balance: the time is until every shard is locked, at the max−min given"
	failRow := bench.Measured(Name, system, size.Metric("failed ÷ successful acquire attempts"), "ratio", ratios)
	failRow.Note = "KV acquires (PUT ?acquire) Consul answered false, per one it answered true"
	timeRow.Policy, failRow.Policy = bench.PolicyDefaults, bench.PolicyDefaults
	if system == bench.SystemTuned {
		timeRow.Policy, failRow.Policy = bench.PolicyDefault, bench.PolicyDefault
		timeRow = timeRow.WithNote("tuned: until, besides, no worker holds more than ⌈N/W⌉; a worker tries at most ⌈N/W⌉ shards, W the members it sees, so the first ones up take more and give back")
	}
	return []bench.Result{timeRow, failRow}, nil
}

// blColdTrial starts a fresh baseline fleet and waits until it is ready:
// every shard locked by one of its workers (and, tuned, none above its
// cap).
func blColdTrial(ctx context.Context, env *bench.Env, system string, size fleet.Size, quick bool) (seconds, failedPerGranted float64, spread int, err error) {
	f, err := fleet.NewBaseline(env, system, Name, size.Shards, shard.DefaultPolicy, quick)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	began := time.Now()
	for i := range size.Workers {
		if err := f.Add(ctx, fleet.WorkerID(i+1)); err != nil {
			return 0, 0, 0, err
		}
	}
	v, at, err := fleet.WaitFor(ctx, f, 3*time.Minute, "every shard locked", fleet.Ready(f, size.Shards, size.Workers))
	if err != nil {
		return 0, 0, 0, err
	}
	acquired, refused := f.Acquires()
	return at.Sub(began).Seconds(), float64(refused) / float64(max(acquired, 1)), v.Spread(), nil
}
