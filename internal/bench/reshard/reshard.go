package reshard

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "reshard"

// Params are the fleet; each trial reshards it to twice its shards and
// back.
type Params struct {
	Fleet fleet.Size
}

// Sizes are reshard's at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full:  Params{Fleet: fleet.Common},
	Small: Params{Fleet: fleet.CommonSmall},
}

// Scenario is reshard.
var Scenario = bench.Declare(Name,
	"12 workers over 128 shards reshard to 256 and back, parents closing as soon as asked (each trial a fresh fleet): a parent's close to its children's first start, the whole reshard, processing lost by shards not involved",
	Sizes, run)

// The goals (issue 33).
const (
	childGoal = 200 * time.Millisecond
	wholeGoal = 10 * time.Second
	lostGoal  = 0
	// doneWithin bounds one reshard; settleWithin the fleet's balance
	// before the next.
	doneWithin   = time.Minute
	settleWithin = time.Minute
	// maxTrials caps the trials: each is a fleet's start and two
	// reshards, about 10 s.
	maxTrials = 10
)

// step is one reshard's figures.
type step struct {
	from, to int
	whole    time.Duration   // the call to the last child's first start
	children []time.Duration // each child's first start less its parents' latest close
	lost     time.Duration   // the most one shard not involved lost
	lostAt   shard.ID        // which
}

func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	trials := min(env.Trials, maxTrials)
	var steps []step
	for trial := range trials {
		got, err := runTrial(ctx, env, p.Fleet)
		if err != nil {
			return nil, fmt.Errorf("trial %d: %w", trial+1, err)
		}
		for _, s := range got {
			env.Logf("shardbench: reshard trial %d: %d → %d in %v; parent close → child start max %v; most lost by a shard not involved %v (%s)",
				trial+1, s.from, s.to, s.whole.Round(time.Millisecond), slices.Max(s.children).Round(time.Millisecond), s.lost, s.lostAt)
		}
		steps = append(steps, got...)
	}
	return rows(p.Fleet, steps, trials, env.Trials), nil
}

// rows turns the trials' steps into the scenario's rows.
func rows(size fleet.Size, steps []step, trials, asked int) []bench.Result {
	var children, lost, up, down []float64
	for _, s := range steps {
		for _, d := range s.children {
			children = append(children, ms(d))
		}
		lost = append(lost, ms(s.lost))
		if s.to > s.from {
			up = append(up, s.whole.Seconds())
		} else {
			down = append(down, s.whole.Seconds())
		}
	}
	n := size.Shards
	what := fmt.Sprintf("%d workers, %d → %d shards and back", size.Workers, n, 2*n)
	// A trial is a fleet: its rows count fleets, and say how many children
	// and reshards they measured.
	child := bench.Measured(Name, bench.SystemShardlease, "a parent's close to its children's first handler start, "+what, "ms", children).
		With("children", float64(len(children)))
	child.Trials = trials
	child = child.WithPolicy(bench.PolicyFast, fleet.FastFailover).WithGoal(fmt.Sprintf("p99 <= %d ms", childGoal.Milliseconds()), child.P99 <= ms(childGoal))
	whole := bench.Measured(Name, bench.SystemShardlease, fmt.Sprintf("whole reshard %d → %d, call to the last child's start (parents close at once), %d workers", n, 2*n, size.Workers), "s", up)
	whole = whole.WithPolicy(bench.PolicyFast, fleet.FastFailover).WithGoal(fmt.Sprintf("p99 <= %.0f s", wholeGoal.Seconds()), whole.P99 <= wholeGoal.Seconds())
	back := bench.Measured(Name, bench.SystemShardlease, fmt.Sprintf("whole reshard %d → %d, call to the last child's start (parents close at once), %d workers", 2*n, n, size.Workers), "s", down).
		WithPolicy(bench.PolicyFast, fleet.FastFailover)
	lostRow := bench.Measured(Name, bench.SystemShardlease, "most processing one shard not involved lost during a reshard, "+what, "ms", lost).
		With("reshards", float64(len(lost)))
	lostRow.Trials = trials
	lostRow = lostRow.WithPolicy(bench.PolicyFast, fleet.FastFailover).WithGoal("max = 0 ms", slices.Max(lost) <= lostGoal)
	out := []bench.Result{child, whole, back, lostRow}
	if trials < asked {
		for i := range out {
			out[i] = out[i].WithNote(fmt.Sprintf("%d trials (fresh fleets, a reshard each way), not %d", trials, asked))
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runTrial starts a fresh fleet, reshards it to twice its shards, lets it
// settle, and reshards it back.
func runTrial(ctx context.Context, env *bench.Env, size fleet.Size) ([]step, error) {
	rec := newRecorder()
	f, err := fleet.NewShardlease(env, Name, fleet.Options{Shards: size.Shards, Policy: fleet.FastFailover, Handler: rec})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for i := range size.Workers {
		if err := f.Add(ctx, fleet.WorkerID(i+1)); err != nil {
			return nil, err
		}
	}
	if err := settle(ctx, f, size.Shards, size.Workers); err != nil {
		return nil, err
	}
	op := admin.Operator{Coordinator: f.Observer().Coordinator(), Name: Name, By: "shardbench"}
	var out []step
	for _, to := range []int{2 * size.Shards, size.Shards} {
		s, err := reshardOnce(ctx, f, op, rec, to)
		if err != nil {
			return out, err
		}
		out = append(out, s)
		if err := settle(ctx, f, to, size.Workers); err != nil {
			return out, err
		}
	}
	return out, nil
}

// settle waits until no reshard runs and n shards are owned by the
// fleet's workers, balanced within one.
func settle(ctx context.Context, f *fleet.Shardlease, n, workers int) error {
	wctx, cancel := context.WithTimeout(ctx, settleWithin)
	defer cancel()
	var last shard.Snapshot
	_ = shard.Follow(wctx, f.Observer().Snapshot, shard.FollowOptions{}, func(snap shard.Snapshot) (time.Time, error) {
		last = snap
		if snap.Config != nil && !snap.Config.Resharding() {
			return time.Time{}, shard.ErrStopFollowing
		}
		return time.Time{}, nil
	})
	if last.Config == nil || last.Config.Resharding() {
		return fmt.Errorf("a reshard still runs %v after it began", settleWithin)
	}
	_, _, err := fleet.WaitFor(ctx, f, settleWithin, fmt.Sprintf("%d shards owned, balanced", n), func(v procfleet.View) bool {
		return len(v.Members) == workers && v.OwnedByMembers() == n && v.Spread() <= 1
	})
	return err
}

// reshardOnce reshards the fleet to `to` shards and measures it.
func reshardOnce(ctx context.Context, f *fleet.Shardlease, op admin.Operator, rec *recorder, to int) (step, error) {
	before, err := f.Observer().Snapshot(ctx, 0)
	if err != nil {
		return step{}, err
	}
	from, _ := before.Config.Current()
	parents := before.Config.IDs()
	t0 := time.Now()
	cfg, err := op.Reshard(ctx, admin.ReshardPlan{Shards: to, Reason: "shardbench"})
	if err != nil {
		return step{}, err
	}
	children := cfg.Segments()[1]
	ids := make([]shard.ID, children.Shards)
	for i := range ids {
		ids[i] = children.ID(i)
	}
	done, err := rec.waitStarted(ctx, ids, t0, doneWithin)
	if err != nil {
		return step{}, fmt.Errorf("reshard %d → %d: %w", from, to, err)
	}
	s := step{from: from, to: to, whole: done.Sub(t0)}
	for _, c := range ids {
		var last time.Time
		for _, p := range cfg.ParentsOf(c) {
			if at := rec.closedAt(p); at.After(last) {
				last = at
			}
		}
		s.children = append(s.children, rec.firstStart(c, t0).Sub(last))
	}
	for _, p := range parents {
		if lost := rec.uncovered(p, t0, rec.askedAt(p)); lost > s.lost {
			s.lost, s.lostAt = lost, p
		}
	}
	for _, c := range ids {
		if lost := rec.uncovered(c, rec.firstStart(c, t0), done); lost > s.lost {
			s.lost, s.lostAt = lost, c
		}
	}
	return s, nil
}
