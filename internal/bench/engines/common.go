package engines

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/bench/scaleout"
	"github.com/shardlease/shardlease/internal/bench/takeaway"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/etcd"
)

// The goals at the common size, Consul's rows' of graceful-handoff and
// scale-out (docs/benchmarks.md) on both engines.
const (
	stopGoal = 100 * time.Millisecond
	joinGoal = time.Second
	// crashMargin is the room a crash's goal leaves above the lease's
	// physical limit: on Consul, crash-failover's 3 s goal.
	crashMargin = 700 * time.Millisecond
)

// crashGoal is a crash's goal on engine: the lease's physical limit (the
// session's TTL as the engine keeps it, then the lock-delay) plus
// crashMargin. etcd counts a lease's TTL in whole seconds, so FastPolicy's
// 1.5 s is 2 s there.
func crashGoal(engine string, p shard.LeasePolicy) time.Duration {
	ttl := p.TTL
	if engine == bench.EngineEtcd {
		ttl = etcd.LeaseTTL(ttl)
	}
	return ttl + p.EffectiveLockDelay() + crashMargin
}

// common measures the process fleet on engine: a worker that is not the
// assignor's kill -9'd, one stopped, and a 13th joining, on FastPolicy.
func common(ctx context.Context, env *bench.Env, p Params, engine string) ([]bench.Result, error) {
	shape := fleet.Fast(p.Fleet)
	shape.Processes, shape.Engine = true, engine
	trials := max(env.Trials, p.MinTrials)
	var rows []bench.Result
	for _, c := range []struct {
		crash bool
		what  string
		goal  time.Duration
	}{
		{true, "kill -9 of a worker (not the assignor's): time until its shards have new handlers running", crashGoal(engine, shape.Policy)},
		{false, "SIGTERM to a worker (not the assignor's): time until its shards have new handlers running", stopGoal},
	} {
		fig, err := takeaway.Measure(ctx, env, fleetName(engine), c.crash, shape, trials)
		if len(fig.Handlers) == 0 {
			return rows, err
		}
		row := fig.Row(Name, bench.SystemShardlease, shape.Size.Metric(metric(c.what, engine))).WithPolicy(shape.PolicyName, shape.Policy)
		row = row.WithGoal(fmt.Sprintf("p99 <= %v", c.goal), err == nil && row.P99 <= c.goal.Seconds())
		if err != nil {
			row = row.WithNote(fmt.Sprintf("only %d of %d trials: %v", len(fig.Handlers), trials, err))
		}
		rows = append(rows, row)
		if err != nil {
			return rows, err
		}
	}
	r, err := fleet.Start(ctx, env, bench.SystemShardlease, fleetName(engine), shape)
	if err != nil {
		return rows, err
	}
	defer r.F.Close()
	fig, err := scaleout.Joins(ctx, env, fleetName(engine), r, env.Trials, 30*time.Second, true)
	if err != nil {
		return rows, err
	}
	hi := (r.Shards + r.Workers) / (r.Workers + 1)
	joined := fmt.Sprintf("worker %d joins", r.Workers+1)
	timeRow := bench.Measured(Name, bench.SystemShardlease, shape.Size.Metric(metric(joined+": time until max−min <= 1", engine)), "s", fig.Seconds).
		WithPolicy(shape.PolicyName, shape.Policy)
	moveRow := bench.Measured(Name, bench.SystemShardlease, shape.Size.Metric(metric(joined+": shards moved", engine)), "shards", fig.Moved).
		With("ideal", float64(hi))
	moveRow.Policy = shape.PolicyName
	return append(rows,
		timeRow.WithGoal(fmt.Sprintf("p99 <= %v", joinGoal), timeRow.P99 <= joinGoal.Seconds()),
		moveRow.WithGoal(fmt.Sprintf("<= %d (ceil(%d/%d))", hi, r.Shards, r.Workers+1), slices.Max(fig.Moved) <= float64(hi)),
	), nil
}
