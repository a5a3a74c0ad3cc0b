package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
)

// scaleOut adds a 13th worker to a ready fleet of 12 and measures how many
// shards move and how long until max−min ≤ 1 (all shards owned), for
// shardlease and the tuned baseline on the fast policy and on the default
// one, and for the default baseline. The default baseline never
// rebalances and the tuned one only caps a worker's share at ⌈N/W⌉, so a
// baseline is watched for baselineWindow and its figures say so. Then
// shardlease alone does the same on the large fleet: a 101st worker joins
// 100 over 10,000 shards, and the bytes the whole fleet reads from Consul
// until it is balanced again are counted too.
func scaleOut(ctx context.Context, env *bench.Env) ([]bench.Result, error) {
	fast, def := ownershipShape(env), defaultShape(env)
	var rows []bench.Result
	for _, run := range []struct {
		system string
		shape  fleetShape
	}{
		{bench.SystemShardlease, fast}, {bench.SystemTuned, fast}, {bench.SystemShardlease, def}, {bench.SystemTuned, def},
		{bench.SystemBaseline, fast}, {bench.SystemShardlease, scaleShape(env)},
	} {
		rs, err := scaleOutSystem(ctx, env, run.system, run.shape)
		for i := range rs {
			rs[i].Policy = run.shape.policyName
			if run.system == bench.SystemBaseline {
				rs[i].Policy = bench.PolicyDefaults
			}
		}
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("%s, %s, %d × %d: %w", run.system, run.shape.policyName, run.shape.workers, run.shape.shards, err)
		}
	}
	return rows, nil
}

// baselineWindow is how long the baseline is watched for a balance it
// never reaches.
func baselineWindow(env *bench.Env) time.Duration {
	if env.Small {
		return 2 * time.Second
	}
	return 10 * time.Second
}

// The goals of the join at scale (docs/benchmarks.md, "Results").
const (
	joinGoalSeconds  = 2.0
	joinGoalMBytes   = 25.0
	bytesPerMB       = 1e6
	commonGoalSecond = 1.0
)

func scaleOutSystem(ctx context.Context, env *bench.Env, system string, shape fleetShape) ([]bench.Result, error) {
	const scenario = "scale-out"
	r, err := startShaped(ctx, env, system, scenario, shape)
	if err != nil {
		return nil, err
	}
	defer r.f.close()
	within := 30 * time.Second
	if system != bench.SystemShardlease {
		within = baselineWindow(env)
	}
	// Only shardlease's fleet counts bytes; listing is one full read of
	// its prefix, what every worker of protocol 1 read on every change.
	sl, _ := r.f.(*slFleet)
	var listing int64
	if sl != nil {
		if listing, err = sl.listingBytes(ctx); err != nil {
			return nil, err
		}
	}
	var secs, moves, spreads, mbytes []float64
	converged := 0
	for i := range env.Trials {
		before, err := r.f.view(ctx, 0)
		if err != nil {
			return nil, err
		}
		id := workerID(r.next)
		var read0 int64
		if sl != nil {
			read0 = sl.received()
		}
		t0 := time.Now()
		if err := r.addWorker(ctx); err != nil {
			return nil, err
		}
		after, t1, err := waitFor(ctx, r.f, within, fmt.Sprintf("%d workers within one of each other", r.workers+1), ready(&balanced{r.f}, r.shards, r.workers+1))
		switch {
		case err == nil:
			converged++
			secs = append(secs, t1.Sub(t0).Seconds())
		case system != bench.SystemShardlease && ctx.Err() == nil:
			// Expected of a baseline: it does not balance. Take the last view.
			secs = append(secs, within.Seconds())
			if after, err = r.f.view(ctx, 0); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
		read := ""
		if sl != nil {
			mbytes = append(mbytes, float64(sl.received()-read0)/bytesPerMB)
			read = fmt.Sprintf("; the fleet read %.2f MB", mbytes[len(mbytes)-1])
		}
		moves = append(moves, float64(procfleet.Moved(before, after)))
		spreads = append(spreads, float64(after.Spread()))
		env.Logf("shardbench: %s %s %d × %d trial %d: %s joined; %d shards moved, max−min %d after %v%s",
			scenario, system, r.workers, r.shards, i+1, id, procfleet.Moved(before, after), after.Spread(), time.Since(t0).Round(time.Millisecond), read)
		// Back to the starting size for the next trial.
		<-r.f.stop(id)
		if err := r.settle(ctx); err != nil {
			return nil, err
		}
	}
	lo, hi := r.shards/(r.workers+1), (r.shards+r.workers)/(r.workers+1)
	timeRow := bench.Measured(scenario, system, shape.metric("time until max−min <= 1"), "s", secs)
	moveRow := bench.Measured(scenario, system, shape.metric("shards moved"), "shards", moves).With("ideal", float64(hi))
	spreadRow := bench.Measured(scenario, system, shape.metric("max−min when measured"), "shards", spreads)
	rows := []bench.Result{timeRow, moveRow, spreadRow}
	switch {
	case shape.atScale:
		rows[0] = timeRow.WithGoal(fmt.Sprintf("p99 <= %.0fs", joinGoalSeconds), converged == env.Trials && timeRow.P99 <= joinGoalSeconds)
		rows[1] = moveRow.WithGoal(fmt.Sprintf("%d or %d (floor, ceil of %d/%d)", lo, hi, r.shards, r.workers+1),
			slices.Min(moves) >= float64(lo) && slices.Max(moves) <= float64(hi))
		round := float64(listing) * float64(r.workers) / bytesPerMB
		bytesRow := bench.Measured(scenario, system, shape.metric("bytes all workers read from Consul, join until max−min <= 1"), "MB", mbytes).
			With("listing_MB", float64(listing)/bytesPerMB).With("protocol1_round_MB", round).
			WithNote(fmt.Sprintf("response heads and bodies, 1 MB = 10^6 bytes; one round of protocol 1 (every one of %d workers lists the prefix once) would read %.1f MB",
				r.workers, round))
		rows = append(rows, bytesRow.WithGoal(fmt.Sprintf("p99 <= %.0f MB", joinGoalMBytes), bytesRow.P99 <= joinGoalMBytes))
		for i := range rows {
			rows[i] = rows[i].With("workers", float64(r.workers)).With("shards", float64(r.shards))
		}
		rows[0] = rows[0].WithPolicy(shape.policyName, shape.policy)
	case system == bench.SystemShardlease:
		rows[0] = timeRow.WithGoal(fmt.Sprintf("p99 <= %.0fs", commonGoalSecond), timeRow.P99 <= commonGoalSecond)
		rows[1] = moveRow.WithGoal(fmt.Sprintf("<= %d (ceil(%d/%d))", hi, r.shards, r.workers+1), moveRow.P99 <= float64(hi))
	}
	if converged < env.Trials {
		rows[0] = rows[0].With("converged_trials", float64(converged)).WithNote(fmt.Sprintf(
			"max−min ≤ 1 reached in %d of %d trials; the figure of the others is the %v observation window", converged, env.Trials, within))
	}
	return rows, nil
}

// balanced is a fleet judged by shardlease's readiness (balance within
// one) whatever its system: the baseline is held to the goal it never
// meets.
type balanced struct{ fleet }

func (balanced) system() string { return bench.SystemShardlease }
