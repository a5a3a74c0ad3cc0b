package stuckworker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/shard"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "stuck-worker"

// Params are the fleet, the stuck worker included, and each trial's
// length.
type Params struct {
	Fleet fleet.Size
	Span  time.Duration
}

// Sizes are stuck-worker's at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full:  Params{Fleet: fleet.Common, Span: 3 * time.Minute},
	Small: Params{Fleet: fleet.CommonSmall, Span: 15 * time.Second},
}

// Scenario is stuck-worker.
var Scenario = bench.Declare(Name,
	"one of 12 workers over 128 shards is live but never acquires, for 3 minutes a trial: unowned shard-time, owner changes per shard",
	Sizes, run)

// stuckID names the worker that never acquires.
const stuckID = "stuck"

// The goals: at most 1 % of the shard-time unowned, and no shard moved
// twice.
const (
	stuckGoalUnowned = 0.01
	stuckGoalChanges = 1
)

// neverAcquires makes a live worker's coordinator take no shard it is
// given: its shard acquisitions grant nothing, as if every lock were held
// (it still campaigns for the assignor role).
func neverAcquires(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op == shard.OpAcquire && !slices.Contains(call.Locks, shard.AssignorLock) {
		return nil
	}
	return invoke(ctx)
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

func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	workers, shards, span := p.Fleet.Workers, p.Fleet.Shards, p.Span
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
	unownedRow := bench.Measured(Name, bench.SystemShardlease, "unowned shard-time, "+what, "%", unowned).
		With("all_owned_s_p50", bench.Percentile(allOwned, 50)).With("stuck_marked_trials", float64(marked))
	unownedRow = unownedRow.WithPolicy(bench.PolicyFast, fleet.FastFailover).
		WithGoal(fmt.Sprintf("p99 <= %.0f %%", 100*stuckGoalUnowned), unownedRow.P99 <= 100*stuckGoalUnowned)
	changesRow := bench.Measured(Name, bench.SystemShardlease, "most owner changes of one shard after its first placement, "+what, "changes", changes).
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
	f, err := fleet.NewShardlease(env, Name, fleet.Options{Shards: shards, Policy: fleet.FastFailover,
		Coordinator: func(id string, c shard.Coordinator) shard.Coordinator {
			if id == stuckID {
				return shard.Intercept(c, neverAcquires)
			}
			return c
		}})
	if err != nil {
		return stuckFigures{}, err
	}
	defer f.Close()
	for i := range workers - 1 {
		if err := f.Add(ctx, fleet.WorkerID(i+1)); err != nil {
			return stuckFigures{}, err
		}
	}
	if err := f.Add(ctx, stuckID); err != nil {
		return stuckFigures{}, err
	}
	return followStuck(ctx, f, shards, span)
}

// followStuck follows f's prefix (shard.Follow) for span and integrates
// what it sees: between two snapshots the ownership is the first's.
func followStuck(ctx context.Context, f *fleet.Shardlease, shards int, span time.Duration) (stuckFigures, error) {
	fig := stuckFigures{allOwned: math.NaN()}
	start := time.Now()
	end := start.Add(span)
	wctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	owner := map[shard.ID]string{} // the last live owner seen
	changes := map[shard.ID]int{}
	var last shard.Snapshot
	lastAt, lastUnowned := start, shards
	var unowned time.Duration
	_ = shard.Follow(wctx, f.Observer().Snapshot, shard.FollowOptions{}, func(snap shard.Snapshot) (time.Time, error) {
		now := time.Now()
		unowned += time.Duration(lastUnowned) * now.Sub(lastAt)
		owners := snap.Owners()
		lastAt, lastUnowned, last = now, shards-len(owners), snap
		if len(owners) == shards && math.IsNaN(fig.allOwned) {
			fig.allOwned = now.Sub(start).Seconds()
		}
		for s, w := range owners {
			if prev, ok := owner[s]; ok && prev != w {
				changes[s]++
			}
			owner[s] = w
		}
		return time.Time{}, nil
	})
	if ctx.Err() != nil {
		return fig, ctx.Err()
	}
	end = time.Now()
	unowned += time.Duration(lastUnowned) * end.Sub(lastAt)
	fig.unowned = float64(unowned) / float64(time.Duration(shards)*end.Sub(start))
	fig.moved = len(changes)
	if len(changes) > 0 {
		fig.maxChanges = slices.Max(slices.Collect(maps.Values(changes)))
	}
	mem, _ := assignor.Remembered(last.Assignments[stuckID])
	fig.stuckMarked = mem.Stuck
	fig.stuckOwns = last.Counts()[stuckID]
	if _, ok := last.Member(stuckID); !ok {
		return fig, errors.New("the stuck worker is not a member at the end: it should stay live")
	}
	return fig, nil
}
