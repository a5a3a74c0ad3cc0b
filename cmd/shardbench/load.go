package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// coordinator-load: Consul HTTP requests per worker per second once a
// fleet of 12 has settled, at 128 and at 4096 shards, and for shardlease
// also 100 workers at 10,000 (the large fleet of every goal), on the default
// policy. The assignor's worker alone lists the fleet: its own rate is a
// row of its own, with the others' beside it. shardlease holds one
// session and one blocking watch per worker, so its rate must not grow
// with the shard count. The default baseline holds one api.Lock per shard
// per worker: a session renewed every TTL/2 and a blocking query per lock,
// so its rate grows with the shards; the tuned one (on the default policy)
// one session whose check it passes every 2 s, one blocking query on the
// prefix and a monitor per held lock; at 4096 shards it would be 12 × 4096
// sessions and goroutines on this agent, so it is measured at 128 and at
// baselineLoadShards and the rate per shard is given.

// loadSize is coordinator-load's fleets: the shardlease sizes, the
// baseline's (12 workers at each shard count), and the length of each
// measured window (one per trial). The largest shardlease size is the
// cold-start goal's: building it is a cold start of 100 workers.
func loadSize(env *bench.Env) (slSizes []coldSize, blWorkers int, blShards []int, window time.Duration) {
	if env.Small {
		return []coldSize{{3, 16}, {3, 64}, {10, 200}}, 3, []int{16}, 2 * time.Second
	}
	return []coldSize{{12, 128}, {12, 4096}, {100, 10000}}, 12, []int{128, baselineLoadShards}, 20 * time.Second
}

// baselineLoadShards is the larger baseline size: 12 × 512 = 6144 locks,
// each with its session and goroutine, is what this 2-core box holds
// beside the agent without the renewals themselves falling behind.
const baselineLoadShards = 512

// loadGoal is the goal of docs/benchmarks.md ("Coordinator load"), with
// room for one renewal (two requests)
// falling inside or outside a window's edge, which moves a 20 s window's
// rate by a few percent.
const (
	loadGoal      = 1.0
	loadTolerance = 0.05
)

func coordinatorLoad(ctx context.Context, env *bench.Env) ([]bench.Result, error) {
	slSizes, blWorkers, blShards, window := loadSize(env)
	var rows []bench.Result
	var first float64
	for i, size := range slSizes {
		rs, err := slLoad(ctx, env, size.workers, size.shards, window)
		if err != nil {
			return rows, fmt.Errorf("shardlease, %d × %d: %w", size.workers, size.shards, err)
		}
		if i == 0 {
			first = rs[0].P50
		} else if first > 0 {
			rs[0] = rs[0].With(fmt.Sprintf("ratio_to_%d_shards", slSizes[0].shards), rs[0].P50/first)
		}
		rows = append(rows, rs...)
	}
	for _, system := range []string{bench.SystemBaseline, bench.SystemTuned} {
		for _, n := range blShards {
			row, err := blLoad(ctx, env, system, blWorkers, n, window)
			if err != nil {
				return rows, fmt.Errorf("%s, %d shards: %w", system, n, err)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// slLoad starts a shardlease fleet, lets it converge and settle, and
// measures env.trials windows: a row of the rate per worker, and one of
// the assignor's worker's own rate beside the others'.
func slLoad(ctx context.Context, env *bench.Env, workers, n int, window time.Duration) ([]bench.Result, error) {
	o := steadyOptions{
		consul: env.CoordConfig("shardbench/coordinator-load"), workers: workers,
		// The default policy: renew every 2 s (a check update and a
		// session read per renewal).
		policy: shard.DefaultPolicy, converge: 3 * time.Minute,
	}
	f, cold, err := coldStart(ctx, o, n, env.Log)
	if err != nil {
		return nil, err
	}
	defer f.close()
	env.Logf("shardbench: coordinator-load shardlease: %d workers own %d shards after %.2fs; settling, then %d windows of %v",
		workers, n, cold.ColdStartSeconds, env.Trials, window)
	time.Sleep(o.policy.RenewEvery)
	var samples []float64
	var last map[string]float64
	var asg assignorLoad
	for trial := range env.Trials {
		rate, byEP, err := asg.window(ctx, f, window)
		if err != nil {
			return nil, err
		}
		samples, last = append(samples, rate), byEP
		env.Logf("shardbench: coordinator-load shardlease %d × %d trial %d: %.3f requests per worker per second (%s); %s",
			workers, n, trial+1, rate, endpoints(byEP), asg.last())
	}
	steady := f.converged(ctx)
	if !steady {
		env.Logf("shardbench: coordinator-load shardlease %d shards: warning: not converged at the end", n)
	}
	row := loadRow(bench.SystemShardlease, n, workers, samples, last)
	row.Policy = bench.PolicyDefault
	if !steady {
		// A fleet that lost workers or shards meanwhile was not in the
		// steady state this row is about: say so beside the figure.
		row = row.WithNote("not converged at the end of the windows: the rate includes workers rejoining")
	}
	row = row.WithGoal(fmt.Sprintf("p99 <= %.2f (1 per second, %.0f %% for a renewal at a window's edge), the same at every size",
		loadGoal+loadTolerance, 100*loadTolerance), row.P99 <= loadGoal+loadTolerance)
	return []bench.Result{row, asg.row(workers, n, env.Trials)}, nil
}

// blLoad starts a fleet of a baseline (the tuned one on the default
// policy, as shardlease's rows), waits until every shard is locked, lets
// the waiting locks settle into their blocking queries, and measures
// env.trials windows.
func blLoad(ctx context.Context, env *bench.Env, system string, workers, n int, window time.Duration) (bench.Result, error) {
	f, err := newBaselineFleet(env, system, "coordinator-load", n, shard.DefaultPolicy)
	if err != nil {
		return bench.Result{}, err
	}
	defer f.close()
	began := time.Now()
	for i := range workers {
		if err := f.add(ctx, workerID(i+1)); err != nil {
			return bench.Result{}, err
		}
	}
	if _, _, err := waitFor(ctx, f, 3*time.Minute, "every shard locked", func(v procfleet.View) bool {
		return len(v.Members) == workers && v.OwnedByMembers() == n
	}); err != nil {
		return bench.Result{}, err
	}
	env.Logf("shardbench: coordinator-load %s: %d workers hold all %d shards after %v; settling, then %d windows of %v",
		system, workers, n, time.Since(began).Round(time.Millisecond), env.Trials, window)
	// A waiting api.Lock's blocking query lasts LockWaitTime (15 s): let
	// the burst of the start pass.
	settle := 15 * time.Second
	if env.Small {
		settle = time.Second
	}
	time.Sleep(settle)
	f.mu.Lock()
	counters := make([]*consul.RequestCounter, 0, len(f.workers))
	for _, bw := range f.workers {
		counters = append(counters, &bw.sev.requests.RequestCounter)
	}
	f.mu.Unlock()
	var samples []float64
	var last map[string]float64
	for trial := range env.Trials {
		rate, byEP, _, err := requestRate(ctx, counters, window)
		if err != nil {
			return bench.Result{}, err
		}
		samples, last = append(samples, rate), byEP
		env.Logf("shardbench: coordinator-load %s %d shards trial %d: %.3f requests per worker per second (%s)",
			system, n, trial+1, rate, endpoints(byEP))
	}
	row := loadRow(system, n, workers, samples, last)
	row.Policy = bench.PolicyDefaults
	if system == bench.SystemTuned {
		row.Policy = bench.PolicyDefault
	}
	return row.With("per_shard", row.P50/float64(n)), nil
}

// loadRow is one size's row, with the last window's rate per endpoint.
func loadRow(system string, shards, workers int, samples []float64, byEP map[string]float64) bench.Result {
	row := bench.Measured("coordinator-load", system, fmt.Sprintf("Consul requests per worker per second, %d workers × %d shards", workers, shards),
		"req/s", samples).With("shards", float64(shards)).With("workers", float64(workers))
	for ep, r := range byEP {
		row = row.With(ep, r)
	}
	return row
}

// endpoints formats a rate per endpoint for a progress line.
func endpoints(byEP map[string]float64) string {
	eps := make([]string, 0, len(byEP))
	for ep := range byEP {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	parts := make([]string, len(eps))
	for i, ep := range eps {
		parts[i] = fmt.Sprintf("%s %.3f", ep, byEP[ep])
	}
	return strings.Join(parts, ", ")
}
