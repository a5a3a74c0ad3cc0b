package rollingrestart

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
)

// rejoinGrace is the --rejoin-grace of the variant with one: above the
// down time, so that every worker returns within it.
const rejoinGrace = 10 * time.Second

// Name is the scenario's name on the command line and in its rows.
const Name = "rolling-restart"

// Params are the rolling restart's fleet, down time and trials.
type Params struct {
	Fleet fleet.Size
	// Down is how long each worker stays down, below rejoinGrace.
	Down time.Duration
	// MinTrials is the least number of rolling restarts each variant runs,
	// whatever --trials says (one takes a minute or two).
	MinTrials int
}

// Sizes are the rolling restart's at full size (12 workers over 128
// shards, 3 s down, at least 3 trials) and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full:  Params{Fleet: fleet.Common, Down: 3 * time.Second, MinTrials: 3},
	Small: Params{Fleet: fleet.CommonSmall, Down: time.Second},
}

// Scenario is rolling-restart.
var Scenario = bench.Declare(Name,
	"each of 12 `shardd worker` processes over 128 shards is restarted in turn (SIGTERM, 3 s down, the same --id), with --rejoin-grace 10s and without (≥ 3 trials): shard moves, the longest time a shard has no handler, max−min",
	Sizes, run)

// restartFigures are one variant's samples, one per rolling restart.
type restartFigures struct {
	moves     []float64 // handler runs of a shard followed by one on another worker
	kvMoves   []float64 // owner changes to another worker the observer saw
	longest   []float64 // the longest time a shard had no running handler, s
	spread    []float64 // max − min over live workers at rest (restSpread)
	spreadAll []float64 // max − min over live workers at every view
	overTwo   []float64 // the longest stretch of views with max − min > 2, s
	seconds   []float64 // the whole rolling restart, s
}

func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	size, down := p.Fleet, p.Down
	trials := max(env.Trials, p.MinTrials)
	var rows []bench.Result
	for _, grace := range []time.Duration{rejoinGrace, 0} {
		fig, err := restartVariant(ctx, env, size, down, grace, trials)
		if len(fig.moves) > 0 {
			rows = append(rows, restartRows(env, size, down, grace, trials, fig, err)...)
		}
		if err != nil {
			return rows, fmt.Errorf("rejoin grace %v: %w", grace, err)
		}
	}
	return rows, nil
}

// restartRows makes a variant's rows, each with the goal issue 16 sets.
func restartRows(env *bench.Env, size fleet.Size, down, grace time.Duration, trials int, fig restartFigures, err error) []bench.Result {
	const scenario = Name
	with := "rejoin grace " + grace.String()
	if grace == 0 {
		with = "no rejoin grace"
	}
	common := func(r bench.Result) bench.Result {
		r = r.WithPolicy(bench.PolicyDefault, shard.DefaultPolicy).
			With("restart_s_p50", bench.Percentile(fig.seconds, 50)).With("down_s", down.Seconds()).With("rejoin_grace_s", grace.Seconds())
		r = r.WithNote(fmt.Sprintf("%d `shardd worker` processes × %d shards, each in turn: SIGTERM, its exit, %v down, started again with the same --id, the fleet ready again before the next",
			size.Workers, size.Shards, down))
		if err != nil {
			r = r.WithNote(fmt.Sprintf("only %d of %d trials: %v", len(fig.moves), trials, err))
		}
		return r
	}
	moves := common(bench.Measured(scenario, bench.SystemShardlease, "shard moves over the rolling restart, "+with, "moves", fig.moves)).
		With("kv_moves_max", slices.Max(fig.kvMoves)).
		WithNote("a move: a shard's handler run followed by one on another worker ID (the workers' histories); free and back to the same ID is none; kv_moves: owner changes to another ID in the observer's views")
	gap := common(bench.Measured(scenario, bench.SystemShardlease, "longest time a shard has no running handler, "+with, "s", fig.longest)).
		WithNote("over every shard, from a handler's end line to the shard's next start line in the workers' histories, across processes (wall clocks)")
	if grace > 0 {
		goal := down + time.Second
		return []bench.Result{
			moves.WithGoal("max = 0", moves.Max == 0),
			gap.WithGoal(fmt.Sprintf("max <= %v", goal), gap.Max <= goal.Seconds()),
		}
	}
	spread := common(bench.Measured(scenario, bench.SystemShardlease, "max − min of shards per live worker during the rolling restart, "+with, "shards", fig.spread)).
		With("every_view_max", slices.Max(fig.spreadAll)).With("over_2_s_max", slices.Max(fig.overTwo)).
		WithNote("over the live workers, at every observer view from the first SIGTERM until the fleet is ready after the last start in which the fleet is at rest: " +
			"every shard owned by a live worker and every live worker owning one (no hand-off, failover or join under way); every_view_max counts every view. " +
			"A worker that starts again owns nothing until the hand-offs to it finish, so at some view the spread is a whole share; " +
			"over_2_s is the longest stretch of views in which max − min was above 2")
	return []bench.Result{
		moves.WithGoal(fmt.Sprintf("max <= %d", 2*size.Shards), moves.Max <= float64(2*size.Shards)),
		gap.WithGoal("max <= 1s", gap.Max <= 1),
		spread.WithGoal("max <= 2", spread.Max <= 2),
	}
}

// restartVariant starts a fleet of `shardd worker` processes with the
// given rejoin grace and runs trials rolling restarts on it.
func restartVariant(ctx context.Context, env *bench.Env, size fleet.Size, down, grace time.Duration, trials int) (restartFigures, error) {
	var fig restartFigures
	pf, err := fleet.NewProcs(env, bench.SystemShardlease, Name, size.Shards, shard.DefaultPolicy, false, "--rejoin-grace", grace.String())
	if err != nil {
		return fig, err
	}
	r, err := fleet.StartOn(ctx, env, pf, size) // on error, pf is closed
	if err != nil {
		return fig, err
	}
	defer pf.Close()
	for i := range trials {
		if err := restartOnce(ctx, r, pf, down, &fig); err != nil {
			return fig, err
		}
		n := len(fig.moves) - 1
		env.Logf("shardbench: rolling-restart, rejoin grace %v, trial %d: %v, %v moves (%v seen in Consul), longest without a handler %.3fs, max−min at rest %v (at any view %v)",
			grace, i+1, time.Duration(fig.seconds[n]*float64(time.Second)).Round(time.Millisecond), fig.moves[n], fig.kvMoves[n], fig.longest[n], fig.spread[n], fig.spreadAll[n])
	}
	return fig, nil
}

// restartOnce restarts every worker of r in turn, in the order of their
// IDs, and appends the figures of that rolling restart to fig.
func restartOnce(ctx context.Context, r *fleet.Run, pf *fleet.Procs, down time.Duration, fig *restartFigures) error {
	obs := newRestartObserver(r.Shards)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		// Ends when stopWatch is called; its "not reached" error is that.
		_, _, _ = fleet.WaitFor(watchCtx, r.F, time.Hour, "the end of the rolling restart", func(v procfleet.View) bool { obs.see(v); return false })
	}()
	defer func() { stopWatch(); <-watched }()
	t0 := time.Now()
	for i := 1; i <= r.Workers; i++ {
		id := fleet.WorkerID(i)
		<-r.F.Stop(id)
		select {
		case <-time.After(down):
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := r.F.Add(ctx, id); err != nil {
			return err
		}
		if err := r.Settle(ctx); err != nil {
			return fmt.Errorf("after restarting %s: %w", id, err)
		}
	}
	took := time.Since(t0)
	stopWatch()
	<-watched
	ivs, err := pf.HandlerRuns(ctx, r.Shards)
	if err != nil {
		return err
	}
	rf := restartRuns(ivs, t0.UnixNano())
	if rf.shard != "" {
		r.Env.Logf("shardbench: rolling-restart: the longest time without a handler, %v, was %s's", rf.longest.Round(time.Millisecond), rf.shard)
	}
	spread, spreadAll, kvMoves, overTwo := obs.figures()
	fig.moves = append(fig.moves, float64(rf.moves))
	fig.kvMoves = append(fig.kvMoves, float64(kvMoves))
	fig.longest = append(fig.longest, rf.longest.Seconds())
	fig.spread = append(fig.spread, float64(spread))
	fig.spreadAll = append(fig.spreadAll, float64(spreadAll))
	fig.overTwo = append(fig.overTwo, overTwo.Seconds())
	fig.seconds = append(fig.seconds, took.Seconds())
	return nil
}

// runFigures are what the handler runs say of one rolling restart.
type runFigures struct {
	moves   int           // a shard's run followed by one on another worker
	longest time.Duration // the longest time between a run's end and its shard's next start
	shard   shard.ID      // the shard of longest
}

// restartRuns is what the handler runs that started after since (ns)
// say of one rolling restart (offsetlog.Handoffs).
func restartRuns(ivs []offsetlog.Interval, since int64) runFigures {
	var f runFigures
	f.moves, f.longest, f.shard = offsetlog.Handoffs(ivs, since)
	return f
}

// restartObserver follows the observer's views during a rolling restart:
// the spread at rest, at every view, and the owner changes it saw.
type restartObserver struct {
	shards    int // the fleet's
	mu        sync.Mutex
	spread    int // the largest restSpread
	spreadAll int // the largest spread over live workers at any view
	owner     map[string]string
	moves     int
	overSince time.Time     // the first view of the current stretch with a spread above 2
	overTwo   time.Duration // the longest such stretch ended so far
}

func newRestartObserver(shards int) *restartObserver {
	return &restartObserver{shards: shards, owner: map[string]string{}}
}

// see takes one view: a shard held by another worker than the one last
// seen holding it is a move (a free shard keeps its last owner).
func (o *restartObserver) see(v procfleet.View) {
	o.seeAt(v, time.Now())
}

func (o *restartObserver) seeAt(v procfleet.View, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for s, w := range v.Owners {
		if last, ok := o.owner[s]; ok && last != w {
			o.moves++
		}
		o.owner[s] = w
	}
	n := v.Spread()
	o.spreadAll = max(o.spreadAll, n)
	switch {
	case n > 2 && o.overSince.IsZero():
		o.overSince = now
	case n <= 2 && !o.overSince.IsZero():
		o.overTwo = max(o.overTwo, now.Sub(o.overSince))
		o.overSince = time.Time{}
	}
	if n, ok := restSpread(v, o.shards); ok {
		o.spread = max(o.spread, n)
	}
}

// figures returns the largest spread at rest, at any view, the moves, and
// the longest stretch with a spread above 2 (one still open counts until
// now).
func (o *restartObserver) figures() (spread, spreadAll, moves int, overTwo time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	overTwo = o.overTwo
	if !o.overSince.IsZero() {
		overTwo = max(overTwo, time.Since(o.overSince))
	}
	return o.spread, o.spreadAll, o.moves, overTwo
}

// restSpread is a view's max − min of shards per live worker when the
// fleet of shards shards is at rest: every shard owned by a live worker,
// every live worker owning at least one (no hand-off, failover or join
// under way); false otherwise.
func restSpread(v procfleet.View, shards int) (int, bool) {
	if len(v.Members) == 0 || v.OwnedByMembers() != shards {
		return 0, false
	}
	for _, n := range v.Counts() {
		if n == 0 {
			return 0, false
		}
	}
	return v.Spread(), true
}
