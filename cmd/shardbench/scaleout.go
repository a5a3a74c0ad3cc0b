package main

import (
	"context"
	"fmt"
	"math"
	"time"
)

// scaleOut adds a 13th worker to a ready fleet of 12 and measures how many
// shards move and how long until max−min ≤ 1 (all shards owned). The
// baseline never rebalances, so it is watched for baselineWindow and its
// figures say so.
func scaleOut(ctx context.Context, env *benchEnv) ([]result, error) {
	var rows []result
	for _, system := range []string{systemShardlease, systemBaseline} {
		rs, err := scaleOutSystem(ctx, env, system)
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", system, err)
		}
	}
	return rows, nil
}

// baselineWindow is how long the baseline is watched for a balance it
// never reaches.
func baselineWindow(env *benchEnv) time.Duration {
	if env.small {
		return 2 * time.Second
	}
	return 10 * time.Second
}

func scaleOutSystem(ctx context.Context, env *benchEnv, system string) ([]result, error) {
	const scenario = "scale-out"
	r, err := startFleet(ctx, env, system, scenario)
	if err != nil {
		return nil, err
	}
	defer r.f.close()
	within := 30 * time.Second
	if system == systemBaseline {
		within = baselineWindow(env)
	}
	var secs, moves, spreads []float64
	converged := 0
	for i := range env.trials {
		before, err := r.f.view(ctx, 0)
		if err != nil {
			return nil, err
		}
		id := workerID(r.next)
		t0 := time.Now()
		if err := r.addWorker(ctx); err != nil {
			return nil, err
		}
		after, t1, err := waitFor(ctx, r.f, within, "13 workers within one of each other", ready(&balanced{r.f}, r.shards, r.workers+1))
		switch {
		case err == nil:
			converged++
			secs = append(secs, t1.Sub(t0).Seconds())
		case system == systemBaseline && ctx.Err() == nil:
			// Expected: it never balances. Take the last view.
			secs = append(secs, within.Seconds())
			if after, err = r.f.view(ctx, 0); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
		moves = append(moves, float64(moved(before, after)))
		spreads = append(spreads, float64(after.spread()))
		env.logf("shardbench: %s %s trial %d: %s joined; %d shards moved, max−min %d after %v",
			scenario, system, i+1, id, moved(before, after), after.spread(), time.Since(t0).Round(time.Millisecond))
		// Back to 12 for the next trial.
		<-r.f.stop(id)
		if err := r.settle(ctx); err != nil {
			return nil, err
		}
	}
	ideal := math.Ceil(float64(r.shards) / float64(r.workers+1))
	timeRow := measured(scenario, system, "time until max−min <= 1", "s", secs)
	moveRow := measured(scenario, system, "shards moved", "shards", moves).with("ideal", ideal)
	spreadRow := measured(scenario, system, "max−min when measured", "shards", spreads)
	if system == systemShardlease {
		timeRow = timeRow.withGoal("p99 <= 1s", timeRow.P99 <= 1)
		moveRow = moveRow.withGoal(fmt.Sprintf("<= %.0f (ceil(%d/%d))", ideal, r.shards, r.workers+1), moveRow.P99 <= ideal)
	}
	if converged < env.trials {
		timeRow.Note = fmt.Sprintf("max−min ≤ 1 reached in %d of %d trials; the figure of the others is the %v observation window",
			converged, env.trials, within)
		timeRow = timeRow.with("converged_trials", float64(converged))
	}
	return []result{timeRow, moveRow, spreadRow}, nil
}

// balanced is a fleet judged by shardlease's readiness (balance within
// one) whatever its system: the baseline is held to the goal it never
// meets.
type balanced struct{ fleet }

func (balanced) system() string { return systemShardlease }
