package coordinatorload

import (
	"context"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/bench/steady"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "coordinator-load"

// Params are coordinator-load's fleets and windows.
type Params struct {
	// Shardlease are shardlease's fleets. The largest is the cold-start
	// goal's: building it is a cold start of 100 workers.
	Shardlease []fleet.Size
	// SessionTTL are shardlease's fleets on Consul's session-TTL liveness
	// with shard.SessionTTLPolicy, whose renewal is one request.
	SessionTTL []fleet.Size
	// BaselineWorkers run each baseline at each of BaselineShards.
	BaselineWorkers int
	BaselineShards  []int
	// Window is the length of each measured window (one per trial).
	Window time.Duration
	// BaselineSettle is how long a baseline fleet is left, once it holds
	// every lock, before it is measured: a waiting api.Lock's blocking
	// query lasts LockWaitTime (15 s), and the burst of the start passes.
	BaselineSettle time.Duration
	// Quick runs the default baseline quick (fleet.Shape.Quick).
	Quick bool
}

// Sizes are coordinator-load's at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full: Params{Shardlease: []fleet.Size{fleet.Common, {Workers: 12, Shards: 4096}, fleet.Large},
		SessionTTL:      []fleet.Size{fleet.Common, fleet.Large},
		BaselineWorkers: 12, BaselineShards: []int{128, baselineLoadShards}, Window: 20 * time.Second, BaselineSettle: 15 * time.Second},
	Small: Params{Shardlease: []fleet.Size{fleet.CommonSmall, {Workers: 3, Shards: 64}, fleet.LargeSmall},
		SessionTTL:      []fleet.Size{fleet.CommonSmall},
		BaselineWorkers: 3, BaselineShards: []int{16}, Window: 2 * time.Second, BaselineSettle: time.Second, Quick: true},
}

// Scenario is coordinator-load.
var Scenario = bench.Declare(Name,
	"Consul HTTP requests per worker per second in steady state, 12 workers at 128 and 4096 shards and 100 at 10,000 (baseline: 12 at 128 and 512); the assignor's worker's own rate",
	Sizes, run)

// baselineLoadShards is the larger baseline size: 12 × 512 = 6144 locks,
// each with its session and goroutine, is what this 2-core box holds
// beside the agent without the renewals themselves falling behind.
const baselineLoadShards = 512

// loadGoal is the goal of docs/benchmarks.md ("Coordinator load"): one
// request to the Consul servers per renewal of the default policy (every
// second), with 5 % of room for a renewal falling inside or outside a
// window's edge. Check liveness renews with two requests: a pass of the
// worker's TTL check, which its agent answers from memory (Consul sends
// the servers nothing for a pass that leaves the check passing), and a
// read of the session, which the servers answer; its server rate is the
// second alone (every request but agentLocal). Session-TTL liveness
// renews with one request, which the servers answer: the goal is its
// every request, per renewal of shard.SessionTTLPolicy (every 2 s).
const (
	loadGoal      = 1.0
	loadTolerance = 0.05
)

// agentLocal is the endpoint of check liveness's pass, which the worker's
// agent answers without the servers.
const agentLocal = "PUT /v1/agent/check/update"

func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	slSizes, blWorkers, blShards, window := p.Shardlease, p.BaselineWorkers, p.BaselineShards, p.Window
	var rows []bench.Result
	var first float64
	for i, size := range slSizes {
		rs, err := slLoad(ctx, env, consul.LivenessCheck, size.Workers, size.Shards, window)
		if err != nil {
			return rows, fmt.Errorf("shardlease, %d × %d: %w", size.Workers, size.Shards, err)
		}
		if i == 0 {
			first = rs[0].P50
		} else if first > 0 {
			rs[0] = rs[0].With(fmt.Sprintf("ratio_to_%d_shards", slSizes[0].Shards), rs[0].P50/first)
		}
		rows = append(rows, rs...)
	}
	for _, size := range p.SessionTTL {
		rs, err := slLoad(ctx, env, consul.LivenessTTL, size.Workers, size.Shards, window)
		if err != nil {
			return rows, fmt.Errorf("shardlease on session-TTL liveness, %d × %d: %w", size.Workers, size.Shards, err)
		}
		rows = append(rows, rs[0])
	}
	for _, system := range []string{bench.SystemBaseline, bench.SystemTuned} {
		for _, n := range blShards {
			row, err := blLoad(ctx, env, system, blWorkers, n, p)
			if err != nil {
				return rows, fmt.Errorf("%s, %d shards: %w", system, n, err)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// slLoad starts a shardlease fleet on liveness (check: shard.DefaultPolicy,
// TTL: shard.SessionTTLPolicy), lets it converge and settle, and measures
// env.Trials windows. On check liveness it returns a row of the rate per
// worker, one of the rate that reaches the servers and one of the
// assignor's worker's own rate beside the others'; on session-TTL
// liveness, a row of the rate per worker, every request of which reaches
// the servers.
func slLoad(ctx context.Context, env *bench.Env, liveness consul.Liveness, workers, n int, window time.Duration) ([]bench.Result, error) {
	cfg := env.CoordConfig("shardbench/coordinator-load")
	cfg.Liveness = liveness
	ttl := liveness == consul.LivenessTTL
	policy, policyName := shard.DefaultPolicy, bench.PolicyDefault
	if ttl {
		policy, policyName = shard.SessionTTLPolicy, bench.PolicySessionTTL
	}
	o := steady.Options{Consul: cfg, Workers: workers, Policy: policy, Converge: 3 * time.Minute}
	f, cold, err := steady.ColdStart(ctx, o, n, env.Log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env.Logf("shardbench: coordinator-load shardlease (%s liveness): %d workers own %d shards after %.2fs; settling, then %d windows of %v",
		liveness, workers, n, cold.ColdStartSeconds, env.Trials, window)
	time.Sleep(o.Policy.RenewEvery)
	var samples, servers []float64
	var last map[string]float64
	var asg assignorLoad
	for trial := range env.Trials {
		rate, byEP, err := asg.window(ctx, f, window)
		if err != nil {
			return nil, err
		}
		samples, servers, last = append(samples, rate), append(servers, rate-byEP[agentLocal]), byEP
		env.Logf("shardbench: coordinator-load shardlease (%s liveness) %d × %d trial %d: %.3f requests per worker per second (%s); %s",
			liveness, workers, n, trial+1, rate, steady.Endpoints(byEP), asg.last())
	}
	settled := f.Converged(ctx)
	if !settled {
		env.Logf("shardbench: coordinator-load shardlease %d shards: warning: not converged at the end", n)
	}
	every := policy.RenewEvery
	goal := func(row bench.Result, what string) bench.Result {
		want := (loadGoal + loadTolerance) / every.Seconds()
		return row.WithGoal(fmt.Sprintf("p99 <= %.3f (%s: 1 per %v renewal, %.0f %% for a renewal at a window's edge), the same at every size",
			want, what, every, 100*loadTolerance), row.P99 <= want)
	}
	row := loadRow(bench.SystemShardlease, n, workers, samples, last)
	if ttl {
		row.Metric = fmt.Sprintf("Consul requests per worker per second on session-TTL liveness, %d workers × %d shards", workers, n)
	}
	row.Policy = policyName
	if !settled {
		// A fleet that lost workers or shards meanwhile was not in the
		// steady state this row is about: say so beside the figure.
		row = row.WithNote("not converged at the end of the windows: the rate includes workers rejoining")
	}
	if ttl {
		return []bench.Result{goal(row, "every request reaches the servers")}, nil
	}
	row = row.WithNote(fmt.Sprintf("every request the workers send their agent; %s is answered by the agent alone, the servers' share is the next row", agentLocal))
	server := bench.Measured(Name, bench.SystemShardlease, fmt.Sprintf("Consul server requests per worker per second, %d workers × %d shards", workers, n), "req/s", servers).
		With("shards", float64(n)).With("workers", float64(workers)).
		WithNote(fmt.Sprintf("every request but the check passes (%s), which the worker's agent answers from memory: a pass that leaves the check passing sends the servers nothing", agentLocal))
	server.Policy = policyName
	return []bench.Result{row, goal(server, "requests the servers answer"), asg.row(workers, n, env.Trials)}, nil
}

// blLoad starts a fleet of a baseline (the tuned one on the default
// policy, as shardlease's rows), waits until every shard is locked, lets
// the waiting locks settle into their blocking queries, and measures
// env.Trials windows.
func blLoad(ctx context.Context, env *bench.Env, system string, workers, n int, p Params) (bench.Result, error) {
	window := p.Window
	f, err := fleet.NewBaseline(env, system, Name, n, shard.DefaultPolicy, p.Quick)
	if err != nil {
		return bench.Result{}, err
	}
	defer f.Close()
	began := time.Now()
	for i := range workers {
		if err := f.Add(ctx, fleet.WorkerID(i+1)); err != nil {
			return bench.Result{}, err
		}
	}
	if _, _, err := fleet.WaitFor(ctx, f, 3*time.Minute, "every shard locked", func(v procfleet.View) bool {
		return len(v.Members) == workers && v.OwnedByMembers() == n
	}); err != nil {
		return bench.Result{}, err
	}
	env.Logf("shardbench: coordinator-load %s: %d workers hold all %d shards after %v; settling, then %d windows of %v",
		system, workers, n, time.Since(began).Round(time.Millisecond), env.Trials, window)
	// Let the burst of the start pass (Params.BaselineSettle).
	time.Sleep(p.BaselineSettle)
	counters := f.Requests()
	var samples []float64
	var last map[string]float64
	for trial := range env.Trials {
		rate, byEP, _, err := steady.RequestRate(ctx, counters, window)
		if err != nil {
			return bench.Result{}, err
		}
		samples, last = append(samples, rate), byEP
		env.Logf("shardbench: coordinator-load %s %d shards trial %d: %.3f requests per worker per second (%s)",
			system, n, trial+1, rate, steady.Endpoints(byEP))
	}
	row := loadRow(system, n, workers, samples, last)
	row.Policy = bench.PolicyDefaults
	if system == bench.SystemTuned {
		row.Policy = bench.PolicyDefault
	}
	return row.With("per_shard", row.P50/float64(n)), nil
}

// loadRow is one size's row, with the last window's rate per endpoint.
func loadRow(system string, shards, workers int, samples []float64, byEP map[string]float64) bench.Result {
	row := bench.Measured(Name, system, fmt.Sprintf("Consul requests per worker per second, %d workers × %d shards", workers, shards),
		"req/s", samples).With("shards", float64(shards)).With("workers", float64(workers))
	for ep, r := range byEP {
		row = row.With(ep, r)
	}
	return row
}
