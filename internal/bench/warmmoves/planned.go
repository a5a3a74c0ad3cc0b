package warmmoves

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// movesFigures are one kind of planned move's figures on one fleet.
type movesFigures struct {
	longest []float64 // per trial: the longest gap of a moved shard, s
	gaps    []float64 // every moved shard's gap, s
	moved   []float64 // per trial: the shards moved
	took    []float64 // per trial: until the fleet was at rest, s
}

// add records one trial's moves, which took took.
func (m *movesFigures) add(moves []offsetlog.Move, took time.Duration) {
	longest := 0.0
	for _, mv := range moves {
		g := mv.Gap.Seconds()
		m.gaps = append(m.gaps, g)
		longest = max(longest, g)
	}
	m.longest = append(m.longest, longest)
	m.moved = append(m.moved, float64(len(moves)))
	m.took = append(m.took, took.Seconds())
}

// plannedFigures are one fleet's joins and drains.
type plannedFigures struct{ join, drain movesFigures }

func runPlanned(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	var warm, cold plannedFigures
	errWarm := plannedTrials(ctx, env, p, true, &warm)
	errCold := plannedTrials(ctx, env, p, false, &cold)
	var rows []bench.Result
	for _, kind := range []struct {
		what       string
		warm, cold *movesFigures
	}{
		{"a worker joins", &warm.join, &cold.join},
		{"the joiner drained", &warm.drain, &cold.drain},
	} {
		metric := kind.what + ": longest time a moved shard processes nothing"
		if w := kind.warm; len(w.longest) > 0 {
			r := plannedRow(bench.Measured(Name, bench.SystemShardlease, metric, "s", w.longest), p, w, errWarm)
			rows = append(rows, r.WithGoal("p99 <= 150ms", r.P99 <= 0.15))
		}
		if c := kind.cold; len(c.longest) > 0 {
			shortest := slices.Min(c.gaps)
			r := plannedRow(bench.Measured(Name, SystemNoStandbySide, metric, "s", c.longest), p, c, errCold).With("shortest_move_gap_s", shortest)
			rows = append(rows, r.WithGoal(fmt.Sprintf("every moved shard >= the restore, %v", p.Restore), shortest >= p.Restore.Seconds()))
		}
	}
	return rows, errors.Join(errWarm, errCold)
}

// plannedRow adds what every planned row says to r.
func plannedRow(r bench.Result, p Params, m *movesFigures, err error) bench.Result {
	r = r.WithPolicy(bench.PolicyDefault, shard.DefaultPolicy).
		With("move_gap_p50_s", bench.Percentile(m.gaps, 50)).With("move_gap_p99_s", bench.Percentile(m.gaps, 99)).
		With("moved_per_trial_p50", bench.Percentile(m.moved, 50)).With("at_rest_s_p50", bench.Percentile(m.took, 50)).
		WithNote(fmt.Sprintf("%d `shardd worker --restore %v` processes × %d shards, %s; a fresh worker joins the other %d, and is drained (admin Drain, as shardctl drain) once the fleet is at rest; a gap is from a handler's end line to the shard's next start line in the workers' histories, after the restore when it starts cold",
			p.Fleet.Workers, p.Restore, p.Fleet.Shards, sideNote(r.System), p.Fleet.Workers-1))
	if err != nil {
		r = r.WithNote(fmt.Sprintf("only %d trials: %v", r.Trials, err))
	}
	return r
}

// sideNote says which handler a row's fleet ran.
func sideNote(system string) string {
	if system == SystemNoStandbySide {
		return "a handler without a standby side (--standby=false): every start restores"
	}
	return "a handler with a standby side: a moved shard is prepared on its new owner, which starts it warm"
}

// plannedTrials runs the joins and drains on one fleet, with a standby
// side or without, appending each trial to fig.
func plannedTrials(ctx context.Context, env *bench.Env, p Params, standby bool, fig *plannedFigures) error {
	f, err := startFleet(ctx, env, p, shard.DefaultPolicy, standby, p.Fleet.Workers-1)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := consul.New(env.CoordConfig(f.Prefix()))
	if err != nil {
		return err
	}
	defer c.Close()
	op := admin.Operator{Coordinator: c, Name: f.Prefix(), By: "shardbench"}
	for t := range trials(env, p) {
		if err := joinAndDrain(ctx, env, p, f, op, fleet.WorkerID(p.Fleet.Workers+t), fig); err != nil {
			return fmt.Errorf("%s, trial %d: %w", sideName(standby), t+1, err)
		}
	}
	return nil
}

// sideName names a fleet in errors and progress lines.
func sideName(standby bool) string {
	if standby {
		return "with a standby side"
	}
	return "without a standby side"
}

// joinAndDrain adds worker id to the fleet, waits until it holds its
// share and every shard processes, drains it until it holds nothing and
// every shard processes again, stops it, and records the moves of each.
func joinAndDrain(ctx context.Context, env *bench.Env, p Params, f *fleet.Procs, op admin.Operator, id string, fig *plannedFigures) error {
	n, w := p.Fleet.Shards, p.Fleet.Workers
	t0 := time.Now()
	if err := f.Add(ctx, id); err != nil {
		return err
	}
	if _, _, err := fleet.WaitFor(ctx, f, fleet.SettleWithin, id+" holds its share", fleet.Ready(f, n, w)); err != nil {
		return err
	}
	joined, err := movesSince(ctx, f, p.Restore, t0)
	if err != nil {
		return err
	}
	fig.join.add(joined, time.Since(t0))

	t1 := time.Now()
	if _, err := op.Drain(ctx, id); err != nil {
		return err
	}
	if _, _, err := fleet.WaitFor(ctx, f, fleet.SettleWithin, id+" drained", drained(id, n)); err != nil {
		return err
	}
	left, err := movesSince(ctx, f, p.Restore, t1)
	if err != nil {
		return err
	}
	fig.drain.add(left, time.Since(t1))
	env.Logf("shardbench: %s: %s joined: %d moved, the longest %v; drained: %d moved, the longest %v",
		Name, id, len(joined), time.Duration(fig.join.longest[len(fig.join.longest)-1]*float64(time.Second)).Round(time.Millisecond),
		len(left), time.Duration(fig.drain.longest[len(fig.drain.longest)-1]*float64(time.Second)).Round(time.Millisecond))
	<-f.Stop(id)
	_, _, err = fleet.WaitFor(ctx, f, fleet.SettleWithin, id+" gone", fleet.Ready(f, n, w-1))
	return err
}

// drained holds once worker id owns nothing, every shard is owned, and the
// others are balanced within one.
func drained(id string, shards int) func(procfleet.View) bool {
	return func(v procfleet.View) bool {
		if v.OwnedByMembers() != shards || len(v.ShardsOf(id)) > 0 {
			return false
		}
		counts := v.Counts()
		delete(counts, id)
		lo, hi := shards, 0
		for _, c := range counts {
			lo, hi = min(lo, c), max(hi, c)
		}
		return hi-lo <= 1
	}
}

// movesSince waits until every shard's handler processes on its owner and
// returns the moves the histories show since t0.
func movesSince(ctx context.Context, f *fleet.Procs, restore time.Duration, t0 time.Time) ([]offsetlog.Move, error) {
	ivs, err := processing(ctx, f, restore)
	if err != nil {
		return nil, err
	}
	moves, _ := offsetlog.Moves(ivs, t0.UnixNano())
	return moves, nil
}

// startFleet starts workers `shardd worker --restore` processes on policy,
// with a standby side or without, and waits until every shard is owned,
// balanced, and processing.
func startFleet(ctx context.Context, env *bench.Env, p Params, policy shard.LeasePolicy, standby bool, workers int) (*fleet.Procs, error) {
	args := []string{"--restore", p.Restore.String()}
	if !standby {
		args = append(args, "--standby=false")
	}
	f, err := fleet.NewProcs(env, bench.SystemShardlease, Name, p.Fleet.Shards, policy, false, args...)
	if err != nil {
		return nil, err
	}
	for i := range workers {
		if err := f.Add(ctx, fleet.WorkerID(i+1)); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := settle(ctx, f, p.Fleet.Shards, workers, p.Restore); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// settle waits until workers members own every shard, balanced within
// one, and every shard's handler processes.
func settle(ctx context.Context, f *fleet.Procs, shards, workers int, restore time.Duration) error {
	if _, _, err := fleet.WaitFor(ctx, f, fleet.SettleWithin, "a ready fleet", fleet.Ready(f, shards, workers)); err != nil {
		return err
	}
	_, err := processing(ctx, f, restore)
	return err
}

// processing waits until each shard's handler processes on its owner
// (fleet.Procs.Processing), with room for a cold start's restore; it
// returns every handler run.
func processing(ctx context.Context, f *fleet.Procs, restore time.Duration) ([]offsetlog.Interval, error) {
	return f.Processing(ctx, restore)
}
