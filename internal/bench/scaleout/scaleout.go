package scaleout

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "scale-out"

// Params are scale-out's fleets.
type Params struct {
	// Fleet is the fleet every system runs; Scale the large fleet
	// shardlease alone runs.
	Fleet, Scale fleet.Size
	// BaselineWindow is how long a baseline is watched for a balance it
	// never reaches.
	BaselineWindow time.Duration
	// Quick runs the default baseline quick (fleet.Shape.Quick).
	Quick bool
}

// Sizes are scale-out's fleets at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full:  Params{Fleet: fleet.Common, Scale: fleet.Large, BaselineWindow: 10 * time.Second},
	Small: Params{Fleet: fleet.CommonSmall, Scale: fleet.LargeSmall, BaselineWindow: 2 * time.Second, Quick: true},
}

// Scenario is scale-out.
var Scenario = bench.Declare(Name,
	"a 13th worker joins 12 over 128 shards, shardlease and the tuned baseline on both policies and api.Lock's defaults (shardlease also a 101st, 100 over 10,000): shards moved, time until max−min ≤ 1, bytes read",
	Sizes, run)

// run adds a 13th worker to a ready fleet of 12 and measures how many
// shards move and how long until max−min ≤ 1 (all shards owned), for
// shardlease and the tuned baseline on the fast policy and on the default
// one, and for the default baseline. The default baseline never
// rebalances and the tuned one only caps a worker's share at ⌈N/W⌉, so a
// baseline is watched for p.BaselineWindow and its figures say so. Then
// shardlease alone does the same on the large fleet: a 101st worker joins
// 100 over 10,000 shards, and the bytes the whole fleet reads from Consul
// until it is balanced again are counted too.
func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	fast, def := fleet.Fast(p.Fleet), fleet.Default(p.Fleet)
	fast.Quick = p.Quick // the default baseline runs on fast's size
	var rows []bench.Result
	for _, run := range []struct {
		system string
		shape  fleet.Shape
	}{
		{bench.SystemShardlease, fast}, {bench.SystemTuned, fast}, {bench.SystemShardlease, def}, {bench.SystemTuned, def},
		{bench.SystemBaseline, fast}, {bench.SystemShardlease, fleet.AtScale(p.Scale)},
	} {
		rs, err := measure(ctx, env, run.system, run.shape, p.BaselineWindow)
		for i := range rs {
			rs[i].Policy = run.shape.PolicyName
			if run.system == bench.SystemBaseline {
				rs[i].Policy = bench.PolicyDefaults
			}
		}
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("%s, %s, %d × %d: %w", run.system, run.shape.PolicyName, run.shape.Workers, run.shape.Shards, err)
		}
	}
	return rows, nil
}

// The goals of the join at scale (docs/benchmarks.md, "Results").
const (
	joinGoalSeconds  = 2.0
	joinGoalMBytes   = 25.0
	bytesPerMB       = 1e6
	commonGoalSecond = 1.0
)

// measure runs the join env.Trials times on a fleet of system and shape,
// watching a baseline for baselineWindow.
func measure(ctx context.Context, env *bench.Env, system string, shape fleet.Shape, baselineWindow time.Duration) ([]bench.Result, error) {
	const scenario = Name
	r, err := fleet.Start(ctx, env, system, scenario, shape)
	if err != nil {
		return nil, err
	}
	defer r.F.Close()
	within := 30 * time.Second
	if system != bench.SystemShardlease {
		within = baselineWindow
	}
	// Only shardlease's in-process fleet counts bytes; listing is one full
	// read of its prefix, what every worker of protocol 1 read on every
	// change.
	sl, _ := r.F.(*fleet.Shardlease)
	var listing int64
	if sl != nil {
		if listing, err = sl.ListingBytes(ctx); err != nil {
			return nil, err
		}
	}
	fig, err := Joins(ctx, env, scenario, r, env.Trials, within, system == bench.SystemShardlease)
	if err != nil {
		return nil, err
	}
	secs, moves, spreads, mbytes, converged := fig.Seconds, fig.Moved, fig.Spreads, fig.MB, fig.Converged
	lo, hi := r.Shards/(r.Workers+1), (r.Shards+r.Workers)/(r.Workers+1)
	timeRow := bench.Measured(scenario, system, shape.Metric("time until max−min <= 1"), "s", secs)
	moveRow := bench.Measured(scenario, system, shape.Metric("shards moved"), "shards", moves).With("ideal", float64(hi))
	spreadRow := bench.Measured(scenario, system, shape.Metric("max−min when measured"), "shards", spreads)
	rows := []bench.Result{timeRow, moveRow, spreadRow}
	switch {
	case shape.AtScale:
		rows[0] = timeRow.WithGoal(fmt.Sprintf("p99 <= %.0fs", joinGoalSeconds), converged == env.Trials && timeRow.P99 <= joinGoalSeconds)
		rows[1] = moveRow.WithGoal(fmt.Sprintf("%d or %d (floor, ceil of %d/%d)", lo, hi, r.Shards, r.Workers+1),
			slices.Min(moves) >= float64(lo) && slices.Max(moves) <= float64(hi))
		round := float64(listing) * float64(r.Workers) / bytesPerMB
		bytesRow := bench.Measured(scenario, system, shape.Metric("bytes all workers read from Consul, join until max−min <= 1"), "MB", mbytes).
			With("listing_MB", float64(listing)/bytesPerMB).With("protocol1_round_MB", round).
			WithNote(fmt.Sprintf("response heads and bodies, 1 MB = 10^6 bytes; one round of protocol 1 (every one of %d workers lists the prefix once) would read %.1f MB",
				r.Workers, round))
		rows = append(rows, bytesRow.WithGoal(fmt.Sprintf("p99 <= %.0f MB", joinGoalMBytes), bytesRow.P99 <= joinGoalMBytes))
		for i := range rows {
			rows[i] = rows[i].With("workers", float64(r.Workers)).With("shards", float64(r.Shards))
		}
		rows[0] = rows[0].WithPolicy(shape.PolicyName, shape.Policy)
	case system == bench.SystemShardlease:
		rows[0] = timeRow.WithGoal(fmt.Sprintf("p99 <= %.0fs", commonGoalSecond), timeRow.P99 <= commonGoalSecond)
		rows[1] = moveRow.WithGoal(fmt.Sprintf("<= %d (ceil(%d/%d))", hi, r.Shards, r.Workers+1), moveRow.P99 <= float64(hi))
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
type balanced struct{ fleet.Fleet }

func (balanced) System() string { return bench.SystemShardlease }

// JoinFigures are the samples of a join's trials, one per trial.
type JoinFigures struct {
	// Seconds until the observer saw max−min ≤ 1 (the window, for a
	// trial that did not get there); Moved the shards that changed owner;
	// Spreads max−min when measured; MB what the fleet read meanwhile
	// (shardlease's in-process fleet only).
	Seconds, Moved, Spreads, MB []float64
	// Settled is, for each trial that reached max−min ≤ 1, the seconds
	// until the last handler started since the join began (every moved
	// shard's new one among them), by the workers' own clocks
	// (Fleet.Starts): when the fleet got there, without the observer's
	// pause between two listings of a large prefix. Nil when a trial moved
	// nothing or its moved shards were not all seen starting.
	Settled []float64
	// Unsettled says why Settled is nil: the first trial that moved
	// nothing, or whose moved shards' handlers were not seen starting.
	Unsettled string
	Converged int // trials that reached max−min ≤ 1
}

// movedShards are the shards whose owner differs between two views.
func movedShards(before, after procfleet.View) []string {
	var out []string
	for s, w := range after.Owners {
		if before.Owners[s] != w {
			out = append(out, s)
		}
	}
	return out
}

// Joins adds a worker to r's ready fleet trials times, each time until its
// counts are within one of each other (at most within), then stops it and
// waits for the fleet to settle back. With mustBalance, a trial that does
// not balance within within is an error; else (a baseline) it counts as
// the window.
func Joins(ctx context.Context, env *bench.Env, scenario string, r *fleet.Run, trials int, within time.Duration, mustBalance bool) (JoinFigures, error) {
	var fig JoinFigures
	sl, _ := r.F.(*fleet.Shardlease)
	for i := range trials {
		before, err := r.F.View(ctx, 0)
		if err != nil {
			return fig, err
		}
		id := r.NextID()
		var read0 int64
		if sl != nil {
			read0 = sl.Received()
		}
		t0 := time.Now()
		if err := r.AddWorker(ctx); err != nil {
			return fig, err
		}
		after, t1, err := fleet.WaitFor(ctx, r.F, within, fmt.Sprintf("%d workers within one of each other", r.Workers+1), fleet.Ready(&balanced{r.F}, r.Shards, r.Workers+1))
		switch {
		case err == nil:
			fig.Converged++
			fig.Seconds = append(fig.Seconds, t1.Sub(t0).Seconds())
			// The last start of any shard since the join began, once every
			// moved shard's new handler is seen started: a shard moved away
			// and back (not among the moved) still counts.
			moved := movedShards(before, after)
			_, ok := r.F.Starts().WaitStarted(ctx, moved, t0, time.Second)
			switch {
			case len(moved) == 0 && fig.Unsettled == "":
				fig.Unsettled = fmt.Sprintf("trial %d moved no shard", i+1)
			case !ok && fig.Unsettled == "":
				fig.Unsettled = fmt.Sprintf("trial %d: within a second of balance no new handler had started for %s", i+1, r.F.Starts().NotStarted(moved, t0))
			case ok && len(moved) > 0:
				latest, _ := r.F.Starts().LatestAfter(t0)
				fig.Settled = append(fig.Settled, latest.Sub(t0).Seconds())
			}
		case !mustBalance && ctx.Err() == nil:
			// Expected of a baseline: it does not balance. Take the last view.
			fig.Seconds = append(fig.Seconds, within.Seconds())
			if after, err = r.F.View(ctx, 0); err != nil {
				return fig, err
			}
		default:
			return fig, err
		}
		read := ""
		if sl != nil {
			fig.MB = append(fig.MB, float64(sl.Received()-read0)/bytesPerMB)
			read = fmt.Sprintf("; the fleet read %.2f MB", fig.MB[len(fig.MB)-1])
		}
		fig.Moved = append(fig.Moved, float64(procfleet.Moved(before, after)))
		fig.Spreads = append(fig.Spreads, float64(after.Spread()))
		env.Logf("shardbench: %s %s %d × %d trial %d: %s joined; %d shards moved, max−min %d after %v%s",
			scenario, r.F.System(), r.Workers, r.Shards, i+1, id, procfleet.Moved(before, after), after.Spread(), time.Since(t0).Round(time.Millisecond), read)
		// Back to the starting size for the next trial.
		<-r.F.Stop(id)
		if err := r.Settle(ctx); err != nil {
			return fig, err
		}
	}
	if len(fig.Settled) != trials {
		if fig.Unsettled == "" {
			fig.Unsettled = fmt.Sprintf("%d of %d trials balanced", len(fig.Settled), trials)
		}
		fig.Settled = nil
	}
	return fig, nil
}
