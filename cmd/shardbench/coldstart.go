package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/shard"
)

// cold-start: workers all start together on an empty prefix. Measured:
// the time until every shard is owned by a live worker with max−min ≤ 1,
// and the failed acquire attempts (shards asked for and not granted) per
// successful one. The goal is for 100 workers × 10,000 shards (each an
// in-process worker with its own Consul client and session), measured also
// at 100 × 1,000. The baselines cannot be run at those sizes — 100 ×
// 10,000 would be one million api.Locks, each with a blocking query — so
// all three systems are also measured at 12 × 128, the size of the other
// scenarios (shardlease and the tuned baseline on shard.DefaultPolicy).

// coldSize is a fleet's size: a cold-start fleet, or an ownership scenario's
// (fleetShape).
type coldSize struct{ workers, shards int }

// coldSizes: the goal's size for shardlease; the goal's 100 workers over a
// tenth of the shards, which shows where this machine's limit lies; and
// the size both systems run.
func coldSizes(env *bench.Env) (goal, fewer, common coldSize) {
	if env.Small {
		return coldSize{10, 200}, coldSize{10, 50}, coldSize{3, 16}
	}
	return coldSize{100, 10000}, coldSize{100, 1000}, coldSize{12, 128}
}

// The goals at the large size (docs/benchmarks.md, "Cold start at scale").
const (
	coldGoalSeconds = 5.0
	coldGoalFailed  = 0.01
)

// coldWithin bounds one shardlease cold start; past it the trial counts as
// not converged and the figure is the bound.
func coldWithin(env *bench.Env) time.Duration {
	if env.Small {
		return 30 * time.Second
	}
	return 2 * time.Minute
}

func coldStartScenario(ctx context.Context, env *bench.Env) ([]bench.Result, error) {
	goal, fewer, common := coldSizes(env)
	var rows []bench.Result
	for _, size := range []coldSize{goal, fewer, common} {
		rs, err := slColdStart(ctx, env, size, size == goal)
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("shardlease, %d × %d: %w", size.workers, size.shards, err)
		}
	}
	// Both baselines at the common size: the default one, and the tuned
	// one on the policy shardlease's cold starts run.
	for _, system := range []string{bench.SystemBaseline, bench.SystemTuned} {
		rs, err := blColdStart(ctx, env, system, common)
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("%s, %d × %d: %w", system, common.workers, common.shards, err)
		}
	}
	return rows, nil
}

// slColdStart runs env.trials cold starts of shardlease, each a fresh fleet
// on a fresh prefix. A trial that does not converge within coldWithin
// counts with that bound as its time, and ends the size's trials: each
// such trial costs minutes and says the same.
func slColdStart(ctx context.Context, env *bench.Env, size coldSize, withGoal bool) ([]bench.Result, error) {
	o := steadyOptions{
		consul: env.CoordConfig("shardbench/cold-start"), workers: size.workers,
		policy: shard.DefaultPolicy, converge: coldWithin(env),
	}
	var secs, ratios, calls, moves []float64
	converged, notes := 0, ""
	for trial := range env.Trials {
		f, r, err := coldStart(ctx, o, size.shards, env.Log)
		switch {
		case err == nil:
			converged++
			f.close()
		case errors.Is(err, errNotConverged) && ctx.Err() == nil:
			r.ColdStartSeconds = o.converge.Seconds()
			notes = err.Error()
		default:
			return nil, err
		}
		granted := r.ShardsAsked - r.FailedAcquires
		ratio := float64(r.FailedAcquires) / float64(max(granted, 1))
		secs, ratios = append(secs, r.ColdStartSeconds), append(ratios, ratio)
		calls, moves = append(calls, float64(r.AcquireCalls)), append(moves, float64(r.Moves))
		env.Logf("shardbench: cold-start shardlease %d × %d trial %d: %.2fs; %d acquire calls asked for %d shards, %d not granted (%.4f per granted), %d errors, %d hand-offs, %d requests",
			size.workers, size.shards, trial+1, r.ColdStartSeconds, r.AcquireCalls, r.ShardsAsked, r.FailedAcquires, ratio, r.AcquireErrors, r.Moves, r.ColdRequests)
		if err != nil {
			env.Logf("shardbench: cold-start shardlease %d × %d: %v; no more trials at this size", size.workers, size.shards, err)
			break
		}
	}
	timeRow := bench.Measured("cold-start", bench.SystemShardlease, coldMetric("time until all owned (shardlease: and max−min <= 1)", size), "s", secs).
		With("workers", float64(size.workers)).With("shards", float64(size.shards)).
		With("acquire_calls_p50", bench.Percentile(calls, 50)).With("handoffs_p50", bench.Percentile(moves, 50))
	failRow := bench.Measured("cold-start", bench.SystemShardlease, coldMetric("failed ÷ successful acquire attempts", size), "ratio", ratios)
	if converged < len(secs) {
		timeRow = timeRow.With("converged_trials", float64(converged))
		timeRow.Note = fmt.Sprintf("converged in %d of %d trials; the others count as the %v bound (last: %s)", converged, len(secs), o.converge, notes)
		failRow.Note = "counted until the bound in the trials that did not converge"
	}
	timeRow.Policy, failRow.Policy = bench.PolicyDefault, bench.PolicyDefault
	if withGoal {
		timeRow = timeRow.WithGoal(fmt.Sprintf("p99 <= %.0fs", coldGoalSeconds), converged == len(secs) && timeRow.P99 <= coldGoalSeconds)
		failRow = failRow.WithGoal(fmt.Sprintf("p99 <= %.2f", coldGoalFailed), converged == len(secs) && failRow.P99 <= coldGoalFailed)
	}
	return []bench.Result{timeRow, failRow}, nil
}

// blColdStart runs env.trials cold starts of a baseline (the tuned one on
// shard.DefaultPolicy). Neither balances, so its time is until every
// shard is locked, and the row says how far from balanced that was.
func blColdStart(ctx context.Context, env *bench.Env, system string, size coldSize) ([]bench.Result, error) {
	var secs, ratios, spreads []float64
	for trial := range env.Trials {
		s, ratio, spread, err := blColdTrial(ctx, env, system, size)
		if err != nil {
			return nil, err
		}
		secs, ratios, spreads = append(secs, s), append(ratios, ratio), append(spreads, float64(spread))
		env.Logf("shardbench: cold-start %s %d × %d trial %d: every shard locked after %.2fs, max−min %d; %.4f refused acquires per granted",
			system, size.workers, size.shards, trial+1, s, spread, ratio)
	}
	timeRow := bench.Measured("cold-start", system, coldMetric("time until all owned (shardlease: and max−min <= 1)", size), "s", secs).
		With("workers", float64(size.workers)).With("shards", float64(size.shards)).
		With("max_minus_min_p50", bench.Percentile(spreads, 50))
	timeRow.Note = "the baselines never balance: the time is until every shard is locked, at the max−min given"
	failRow := bench.Measured("cold-start", system, coldMetric("failed ÷ successful acquire attempts", size), "ratio", ratios)
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
func blColdTrial(ctx context.Context, env *bench.Env, system string, size coldSize) (seconds, failedPerGranted float64, spread int, err error) {
	f, err := newBaselineFleet(env, system, "cold-start", size.shards, shard.DefaultPolicy)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.close()
	began := time.Now()
	for i := range size.workers {
		if err := f.add(ctx, workerID(i+1)); err != nil {
			return 0, 0, 0, err
		}
	}
	v, at, err := waitFor(ctx, f, 3*time.Minute, "every shard locked", ready(f, size.shards, size.workers))
	if err != nil {
		return 0, 0, 0, err
	}
	var acquired, refused int64
	f.mu.Lock()
	for _, bw := range f.workers {
		acquired += bw.sev.requests.acquired.Load()
		refused += bw.sev.requests.refused.Load()
	}
	f.mu.Unlock()
	return at.Sub(began).Seconds(), float64(refused) / float64(max(acquired, 1)), v.Spread(), nil
}

func coldMetric(what string, size coldSize) string {
	return fmt.Sprintf("%s, %d workers × %d shards", what, size.workers, size.shards)
}
