package engines

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "engines"

// Params are the engines scenario's fleets, trials and windows.
type Params struct {
	// Fleet is the process fleet of the take-aways and the join, on
	// FastPolicy; MinTrials the least number of take-away trials.
	Fleet     fleet.Size
	MinTrials int
	// Scale is the in-process fleet of the cold start, the join, the bytes
	// read and the request rate, on DefaultPolicy.
	Scale fleet.Size
	// ColdWithin bounds one cold start at Scale; past it the trial counts
	// as not converged, with the bound as its figure, and ends that
	// engine's scale rows.
	ColdWithin time.Duration
	// SlowCold: a cold start at Scale slower than this is the last one
	// (each such trial costs minutes and says the same); the rows after
	// it are measured on its fleet. Zero: every trial runs.
	SlowCold time.Duration
	// JoinWithin bounds one join at Scale.
	JoinWithin time.Duration
	// Window is one steady-state window of the request rate.
	Window time.Duration
}

// Sizes are the engines scenario's at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full: Params{Fleet: fleet.Common, MinTrials: 20, Scale: fleet.Size{Workers: 1000, Shards: 100_000},
		ColdWithin: 5 * time.Minute, SlowCold: time.Minute, JoinWithin: 30 * time.Second, Window: 20 * time.Second},
	Small: Params{Fleet: fleet.CommonSmall, Scale: fleet.Size{Workers: 20, Shards: 2000},
		ColdWithin: 30 * time.Second, JoinWithin: 30 * time.Second, Window: 2 * time.Second},
}

// Scenario is engines.
var Scenario = bench.Declare(Name,
	"shardlease on etcd beside shardlease on Consul, in one run: a kill -9, a SIGTERM and a join at 12 × 128 (FastPolicy, processes), and 1,000 in-process workers × 100,000 shards (cold start, join, bytes read per join, requests per worker per second)",
	Sizes, run)

// engines are the two, Consul first: every etcd row is compared with the
// Consul row before it.
var engines = []string{bench.EngineConsul, bench.EngineEtcd}

func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	var rows []bench.Result
	for _, part := range []struct {
		measure func(context.Context, *bench.Env, Params, string) ([]bench.Result, error)
		order   []int // indexes into engines, in the order they run
	}{
		{common, []int{0, 1}},
		// etcd first at scale: a thousand workers leave Consul's one dev
		// agent deregistering their checks for a while after they stop,
		// which would load the machine under etcd's rows.
		{atScale, []int{1, 0}},
	} {
		byEngine := make([][]bench.Result, len(engines))
		for _, i := range part.order {
			rs, err := part.measure(ctx, env, p, engines[i])
			byEngine[i] = rs
			if err != nil {
				return append(rows, interleave(byEngine)...), fmt.Errorf("on %s: %w", engines[i], err)
			}
		}
		rows = append(rows, interleave(byEngine)...)
	}
	return rows, nil
}

// interleave puts each etcd row right after the Consul row of its metric,
// with etcd ÷ Consul beside it.
func interleave(byEngine [][]bench.Result) []bench.Result {
	var out []bench.Result
	consul := byEngine[0]
	var etcd []bench.Result
	if len(byEngine) > 1 {
		etcd = byEngine[1]
	}
	used := make([]bool, len(etcd))
	for _, c := range consul {
		out = append(out, c)
		for i, e := range etcd {
			if !used[i] && sameMetric(c, e) {
				used[i] = true
				if c.P50 > 0 && c.P99 > 0 {
					e = e.With("ratio_to_consul_p50", e.P50/c.P50).With("ratio_to_consul_p99", e.P99/c.P99)
				}
				out = append(out, e)
			}
		}
	}
	for i, e := range etcd {
		if !used[i] {
			out = append(out, e)
		}
	}
	return out
}

// metric names a row's measure on engine.
func metric(what, engine string) string { return what + ", on " + engine }

// sameMetric reports whether c (Consul's) and e (etcd's) measure the same.
func sameMetric(c, e bench.Result) bool {
	return c.Unit == e.Unit && strings.Replace(e.Metric, metric("", bench.EngineEtcd), metric("", bench.EngineConsul), 1) == c.Metric
}

// fleetName names engine's fleets in their prefixes and progress lines.
func fleetName(engine string) string { return Name + "-" + strings.ToLower(engine) }
