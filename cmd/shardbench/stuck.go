package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/shard"
)

// stuck-worker: 12 workers over 128 shards on Consul, one of them live (it
// renews, it watches its key, it may even be the assignor) but never
// taking a shard it is given. The assignor must judge it stuck, give its
// shards to the others once, and hand it nothing more under that session.
// Measured over the run, from the moment every worker was started: the
// unowned shard-time (the integral over time of the shards without a live
// holder, over shards × the run's length), and how often a shard changed
// owner after its first placement. The same check on the embedded
// coordinator is worker's TestStuckWorkerDoesNotFlap. The baseline has no
// assignment a worker could be stuck in: no baseline row.

// stuckSize is the fleet, the stuck worker included, and each trial's length.
func stuckSize(env *bench.Env) (workers, shards int, span time.Duration) {
	if env.Small {
		return 3, 16, 15 * time.Second
	}
	return 12, 128, 3 * time.Minute
}

// stuckID names the worker that never acquires.
const stuckID = "stuck"

// The goals: at most 1 % of the shard-time unowned, and no shard moved
// twice.
const (
	stuckGoalUnowned = 0.01
	stuckGoalChanges = 1
)

// neverAcquires is a live worker's coordinator that takes nothing it is
// given: its Acquire grants nothing, as if every lock were held.
type neverAcquires struct{ shard.Coordinator }

func (neverAcquires) Acquire(context.Context, shard.SessionID, []shard.Acquisition) ([]shard.Claim, error) {
	return nil, nil
}

// stuckFigures are one trial's.
type stuckFigures struct {
	unowned     float64 // fraction of shards × span without a live holder
	maxChanges  int     // most owner changes of one shard after its first owner
	moved       int     // shards that changed owner at least once
	allOwned    float64 // seconds until every shard was first owned (NaN: never)
	stuckMarked bool    // the stuck worker's key was marked stuck at the end
	stuckOwns   int     // shards it owned at the end (it cannot own any)
}

// stuckTrials caps the trials of stuck-worker.
const stuckTrials = 2

func stuckWorker(ctx context.Context, env *bench.Env) ([]bench.Result, error) {
	workers, shards, span := stuckSize(env)
	var unowned, changes, moved, allOwned []float64
	marked := 0
	// Each trial takes the whole span (3 minutes): at most two, so that a
	// run of every scenario stays well under an hour; the rows say so.
	trials := min(env.Trials, stuckTrials)
	for trial := range trials {
		fig, err := stuckTrial(ctx, env, workers, shards, span)
		if err != nil {
			return nil, err
		}
		unowned, changes = append(unowned, 100*fig.unowned), append(changes, float64(fig.maxChanges))
		moved, allOwned = append(moved, float64(fig.moved)), append(allOwned, fig.allOwned)
		if fig.stuckMarked && fig.stuckOwns == 0 {
			marked++
		}
		env.Logf("shardbench: stuck-worker trial %d: unowned shard-time %.3f %% over %v; every shard owned after %.2fs; %d shards changed owner, at most %d times; stuck marked %v, owning %d",
			trial+1, 100*fig.unowned, span, fig.allOwned, fig.moved, fig.maxChanges, fig.stuckMarked, fig.stuckOwns)
	}
	what := fmt.Sprintf("%d workers × %d shards, one never acquiring, %v", workers, shards, span)
	unownedRow := bench.Measured("stuck-worker", bench.SystemShardlease, "unowned shard-time, "+what, "%", unowned).
		With("all_owned_s_p50", bench.Percentile(allOwned, 50)).With("stuck_marked_trials", float64(marked))
	unownedRow = unownedRow.WithPolicy(bench.PolicyFast, fastFailover).
		WithGoal(fmt.Sprintf("p99 <= %.0f %%", 100*stuckGoalUnowned), unownedRow.P99 <= 100*stuckGoalUnowned)
	changesRow := bench.Measured("stuck-worker", bench.SystemShardlease, "most owner changes of one shard after its first placement, "+what, "changes", changes).
		With("shards_moved_p50", bench.Percentile(moved, 50))
	changesRow = changesRow.WithGoal(fmt.Sprintf("p99 <= %d", stuckGoalChanges), changesRow.P99 <= stuckGoalChanges)
	if trials < env.Trials {
		note := fmt.Sprintf("%d trials of %v each, not %d", trials, span, env.Trials)
		unownedRow, changesRow = unownedRow.WithNote(note), changesRow.WithNote(note)
	}
	if marked < len(unowned) {
		unownedRow = unownedRow.WithNote(fmt.Sprintf("the stuck worker was marked stuck and owned nothing at the end of only %d of %d trials", marked, len(unowned)))
	}
	return []bench.Result{unownedRow, changesRow}, nil
}

// stuckTrial starts a fresh fleet, the stuck worker among the others, and
// follows it for span.
func stuckTrial(ctx context.Context, env *bench.Env, workers, shards int, span time.Duration) (stuckFigures, error) {
	f, err := newSLFleet(env, "stuck-worker", slOptions{shards: shards, policy: fastFailover,
		coordinator: func(id string, c shard.Coordinator) shard.Coordinator {
			if id == stuckID {
				return neverAcquires{c}
			}
			return c
		}})
	if err != nil {
		return stuckFigures{}, err
	}
	defer f.close()
	for i := range workers - 1 {
		if err := f.add(ctx, workerID(i+1)); err != nil {
			return stuckFigures{}, err
		}
	}
	if err := f.add(ctx, stuckID); err != nil {
		return stuckFigures{}, err
	}
	return followStuck(ctx, f, shards, span)
}

// followStuck follows f's prefix with blocking queries for span and
// integrates what it sees: between two snapshots the ownership is the
// first's.
func followStuck(ctx context.Context, f *slFleet, shards int, span time.Duration) (stuckFigures, error) {
	fig := stuckFigures{allOwned: math.NaN()}
	start := time.Now()
	end := start.Add(span)
	wctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	owner := map[shard.ID]string{} // the last live owner seen
	changes := map[shard.ID]int{}
	var last shard.Snapshot
	var after uint64
	lastAt, lastUnowned := start, shards
	var unowned time.Duration
	for {
		snap, err := f.observer.Snapshot(wctx, after)
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return fig, ctx.Err()
			}
			if wctx.Err() != nil {
				break
			}
			time.Sleep(50 * time.Millisecond) // a failed blocking query
			continue
		}
		unowned += time.Duration(lastUnowned) * now.Sub(lastAt)
		owners := snap.Owners()
		lastAt, lastUnowned, last = now, shards-len(owners), snap
		after = shard.NextIndex(after, snap.Index)
		if len(owners) == shards && math.IsNaN(fig.allOwned) {
			fig.allOwned = now.Sub(start).Seconds()
		}
		for s, w := range owners {
			if prev, ok := owner[s]; ok && prev != w {
				changes[s]++
			}
			owner[s] = w
		}
	}
	end = time.Now()
	unowned += time.Duration(lastUnowned) * end.Sub(lastAt)
	fig.unowned = float64(unowned) / float64(time.Duration(shards)*end.Sub(start))
	fig.moved = len(changes)
	if len(changes) > 0 {
		fig.maxChanges = slices.Max(slices.Collect(maps.Values(changes)))
	}
	a := last.Assignments[stuckID]
	fig.stuckMarked = a.Stuck
	fig.stuckOwns = last.Counts()[stuckID]
	if _, ok := last.Member(stuckID); !ok {
		return fig, errors.New("the stuck worker is not a member at the end: it should stay live")
	}
	return fig, nil
}
