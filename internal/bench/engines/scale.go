package engines

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/bench/scaleout"
	"github.com/shardlease/shardlease/internal/bench/steady"
	"github.com/shardlease/shardlease/shard"
)

// The goals at scale (issue 32): etcd's. Consul's rows at the same size
// are given beside them without a goal, whatever they are.
const (
	coldGoal = 10 * time.Second
	joinTime = 2 * time.Second
	joinMB   = 2.0
	// rateSlack is the room above one request per renewal interval.
	rateSlack = 0.05
)

// startTogether is how many goroutines add the large fleet's workers:
// enough that a thousand start within a moment of each other, as
// processes started together would.
const startTogether = 32

// atScale measures the large in-process fleet on engine, on DefaultPolicy:
// env.Trials cold starts, each a fresh fleet; then, on the last one,
// env.Trials joins of one more worker (its time, the shards moved and the
// bytes the whole fleet read meanwhile) and env.Trials windows of the
// requests each worker sends in steady state. A cold start that does not
// converge within p.ColdWithin ends the engine's rows there.
func atScale(ctx context.Context, env *bench.Env, p Params, engine string) ([]bench.Result, error) {
	shape := fleet.AtScale(p.Scale)
	shape.Engine = engine
	size := shape.Size
	withGoal := engine == bench.EngineEtcd
	var colds, seen []float64 // by the workers' clocks, and when the observer saw it
	ids := shardNames(size.Shards)
	var r *fleet.Run
	notConverged := ""
	for trial := range env.Trials {
		if r != nil {
			r.F.Close()
			r = nil
			// Each cold start on a quiet coordinator: a session the last
			// fleet could not destroy in time (its close sends a thousand
			// at once) expires a TTL later on etcd (Consul may take up to
			// twice that), and the next fleet started meanwhile would be
			// measured against that load.
			select {
			case <-time.After(shape.Policy.TTL + time.Second):
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		f, err := fleet.New(env, bench.SystemShardlease, fleetName(engine), shape)
		if err != nil {
			return nil, err
		}
		began := time.Now()
		r, err = fleet.StartTogether(ctx, env, f, size, p.ColdWithin, startTogether)
		if errors.Is(err, fleet.ErrNotReached) && ctx.Err() == nil {
			colds = append(colds, time.Since(began).Seconds())
			seen = append(seen, colds[len(colds)-1])
			notConverged = err.Error()
			env.Logf("shardbench: %s %d × %d cold start %d: %v; no more trials on %s", Name, size.Workers, size.Shards, trial+1, err, engine)
			break
		}
		if err != nil {
			return nil, err
		}
		seen = append(seen, time.Since(began).Seconds())
		last, ok := r.F.Starts().WaitStarted(ctx, ids, began, time.Second)
		if !ok {
			r.F.Close()
			return nil, fmt.Errorf("%s on %s, cold start %d: the observer saw every shard owned, but within a second no handler had started since the cold start for %s", Name, engine, trial+1, r.F.Starts().NotStarted(ids, began))
		}
		colds = append(colds, last.Sub(began).Seconds())
		env.Logf("shardbench: %s %d × %d on %s, cold start %d: every shard owned, max−min <= 1 after %.2fs (the last handler's start; seen after %.2fs)",
			Name, size.Workers, size.Shards, engine, trial+1, colds[len(colds)-1], seen[len(seen)-1])
		if slow := p.SlowCold; slow > 0 && seen[len(seen)-1] > slow.Seconds() {
			env.Logf("shardbench: %s on %s: a cold start over %v; no more cold starts, the rows after it on this fleet", Name, engine, slow)
			break
		}
	}
	// As for a join, the time is the workers' own (the last handler's
	// start in a fleet the observer then saw owned and balanced), and the
	// observer's is beside it; a trial that gave up counts when it did.
	coldRow := bench.Measured(Name, bench.SystemShardlease, size.Metric(metric("all workers start together: time until every shard is owned and max−min <= 1, by the workers' clocks (the last handler's start)", engine)), "s", colds).
		WithPolicy(shape.PolicyName, shape.Policy)
	seenRow := bench.Measured(Name, bench.SystemShardlease, size.Metric(metric("all workers start together: time until the observer saw every shard owned and max−min <= 1", engine)), "s", seen).
		WithPolicy(shape.PolicyName, shape.Policy).
		WithNote("the observer lists a prefix of this size at most every 250 ms, after decoding the last listing; the row before is when the fleet got there")
	if withGoal {
		coldRow = coldRow.WithGoal(fmt.Sprintf("p99 <= %v", coldGoal), notConverged == "" && coldRow.P99 <= coldGoal.Seconds())
	}
	if notConverged != "" {
		return []bench.Result{coldRow.WithNote(fmt.Sprintf("the last trial did not converge within %v of its last worker's start, its figure is when it gave up, and the rows after it were not measured: %s", p.ColdWithin, notConverged)), seenRow}, nil
	}
	defer r.F.Close()
	rows := []bench.Result{coldRow, seenRow}
	join, err := joinRows(ctx, env, p, r, engine, withGoal)
	rows = append(rows, join...)
	if err != nil {
		return rows, err
	}
	rate, err := rateRow(ctx, env, p, r, engine, withGoal)
	if err != nil {
		return rows, err
	}
	return append(rows, rate), nil
}

// joinRows measures env.Trials joins of one more worker to r's fleet.
func joinRows(ctx context.Context, env *bench.Env, p Params, r *fleet.Run, engine string, withGoal bool) ([]bench.Result, error) {
	sl := r.F.(*fleet.Shardlease)
	listing, err := sl.ListingBytes(ctx)
	if err != nil {
		return nil, err
	}
	fig, err := scaleout.Joins(ctx, env, fleetName(engine), r, env.Trials, p.JoinWithin, true)
	if err != nil {
		return nil, err
	}
	lo, hi := r.Shards/(r.Workers+1), (r.Shards+r.Workers)/(r.Workers+1)
	joined := fmt.Sprintf("worker %d joins", r.Workers+1)
	// The time is the workers' own (the last moved shard's new handler
	// start): the observer lists a prefix this large at most every 250 ms
	// and takes a while to decode it, which its own row shows beside.
	seenRow := bench.Measured(Name, bench.SystemShardlease, r.Size.Metric(metric(joined+": time until the observer saw max−min <= 1", engine)), "s", fig.Seconds).
		WithNote("the observer lists a prefix of this size at most every 250 ms, after decoding the last listing; the row before is when it got there")
	timeRow := bench.Measured(Name, bench.SystemShardlease, r.Size.Metric(metric(joined+": time until max−min <= 1, by the workers' clocks (the last moved shard's new handler start)", engine)), "s", fig.Settled).
		WithNote("the last handler started since the join began, once every moved shard's new handler is seen started")
	if fig.Settled == nil {
		return nil, fmt.Errorf("%s on %s: the join's time cannot be told: %s", Name, engine, fig.Unsettled)
	}
	moveRow := bench.Measured(Name, bench.SystemShardlease, r.Size.Metric(metric(joined+": shards moved", engine)), "shards", fig.Moved).With("ideal", float64(hi))
	mbRow := bench.Measured(Name, bench.SystemShardlease, r.Size.Metric(metric(joined+": bytes all workers read from the coordinator until max−min <= 1", engine)), "MB", fig.MB).
		With("listing_MB", float64(listing)/1e6).
		WithNote("1 MB = 10^6 bytes; Consul: HTTP response heads and bodies; etcd: gRPC messages received with their 5-byte prefixes; listing_MB is one full read of the prefix")
	if withGoal {
		timeRow = timeRow.WithGoal(fmt.Sprintf("p99 <= %v", joinTime), timeRow.P99 <= joinTime.Seconds())
		moveRow = moveRow.WithGoal(fmt.Sprintf("%d or %d (floor, ceil of %d/%d)", lo, hi, r.Shards, r.Workers+1),
			slices.Min(fig.Moved) >= float64(lo) && slices.Max(fig.Moved) <= float64(hi))
		mbRow = mbRow.WithGoal(fmt.Sprintf("p99 <= %.0f MB", joinMB), mbRow.P99 <= joinMB)
	}
	timeRow.Policy, seenRow.Policy, moveRow.Policy, mbRow.Policy = bench.PolicyDefault, bench.PolicyDefault, bench.PolicyDefault, bench.PolicyDefault
	return []bench.Result{timeRow, seenRow, moveRow, mbRow}, nil
}

// rateRow counts the requests every worker of r's fleet sends over
// env.Trials windows, once a renewal interval has passed since the last
// join settled.
func rateRow(ctx context.Context, env *bench.Env, p Params, r *fleet.Run, engine string, withGoal bool) (bench.Result, error) {
	sl := r.F.(*fleet.Shardlease)
	time.Sleep(shard.DefaultPolicy.RenewEvery) // the last join's hand-offs end
	var rates []float64
	var last map[string]float64
	for trial := range env.Trials {
		rate, byEP, _, err := steady.RequestRate(ctx, sl.Requests(), p.Window)
		if err != nil {
			return bench.Result{}, err
		}
		rates, last = append(rates, rate), byEP
		env.Logf("shardbench: %s %d × %d on %s, window %d: %.3f requests per worker per second (%s)",
			Name, r.Workers, r.Shards, engine, trial+1, rate, steady.Endpoints(byEP))
	}
	row := bench.Measured(Name, bench.SystemShardlease, r.Size.Metric(metric("requests per worker per second in steady state", engine)), "req/s", rates)
	for ep, v := range last {
		row = row.With(ep, v)
	}
	row.Policy = bench.PolicyDefault
	if withGoal {
		every := shard.DefaultPolicy.RenewEvery
		goal := (1 + rateSlack) / every.Seconds()
		row = row.WithGoal(fmt.Sprintf("p99 <= %.3f (one per %v renewal + %.0f %%)", goal, every, 100*rateSlack), row.P99 <= goal)
	}
	return row, nil
}

// shardNames are the IDs of a fleet of n shards, as the start log keys them.
func shardNames(n int) []string {
	var out []string
	for _, id := range (shard.Config{Shards: n}).IDs() {
		out = append(out, string(id))
	}
	return out
}
