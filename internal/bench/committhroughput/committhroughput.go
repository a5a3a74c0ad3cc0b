package committhroughput

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/pgtest"
	offconsul "github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/offsets/offsetstest/fencecost"
	"github.com/shardlease/shardlease/offsets/postgres"
)

// commitGoal: fenced ≥ 0.9 × unfenced (docs/benchmarks.md, "Commit
// throughput").
const commitGoal = 0.9

// Name is the scenario's name on the command line and in its rows.
const Name = "commit-throughput"

// Sizes are how long each trial runs each pair, at full size and for a
// smoke run.
var Sizes = bench.Sizes[time.Duration]{Full: 2 * time.Second, Small: 200 * time.Millisecond}

// Scenario is commit-throughput.
var Scenario = bench.Declare(Name,
	"offset commits/s per backend (memory, bolt, consul, postgres), fenced vs the same write unfenced, single and batched",
	Sizes, run)

// commitBackend is one backend's pairs, ready to measure, and how to let
// go of it.
type commitBackend struct {
	system string
	pairs  []commitPair
	close  func()
}

// commitPair is a pair and the words its row is labelled with.
type commitPair struct {
	mode string // "one at a time", "batches of 64", …
	fencecost.Pair
}

// modes labels pairs by their size: one at a time or batches of PerOp.
func modes(suffix string, ps ...fencecost.Pair) []commitPair {
	out := make([]commitPair, len(ps))
	for i, p := range ps {
		out[i] = commitPair{mode: "one at a time" + suffix, Pair: p}
		if p.PerOp > 1 {
			out[i].mode = fmt.Sprintf("batches of %d%s", p.PerOp, suffix)
		}
	}
	return out
}

func run(ctx context.Context, env *bench.Env, window time.Duration) ([]bench.Result, error) {
	openers := []struct {
		system string
		open   func(context.Context, *bench.Env) (commitBackend, error)
	}{
		{"memory", openMemoryPairs},
		{"bolt", openBoltPairs},
		{"consul", openConsulPairs},
		{"postgres", openPostgresPairs},
	}
	var rows []bench.Result
	for _, o := range openers {
		b, err := o.open(ctx, env)
		if err != nil {
			// A backend that cannot run (no PostgreSQL here) is a row
			// saying why, not the end of the run.
			env.Logf("shardbench: commit-throughput: %s: %v", o.system, err)
			rows = append(rows, bench.Result{Scenario: "commit-throughput", System: o.system, Metric: "fenced ÷ unfenced commits/s",
				Unit: "ratio", Note: "not measured: " + err.Error()})
			continue
		}
		rs, err := measurePairs(ctx, env, b, window)
		b.close()
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", o.system, err)
		}
	}
	return rows, nil
}

// measurePairs runs each pair of b for env.Trials windows and makes one row
// per pair.
func measurePairs(ctx context.Context, env *bench.Env, b commitBackend, window time.Duration) ([]bench.Result, error) {
	var rows []bench.Result
	for _, p := range b.pairs {
		var ratios, fenced, unfenced, cost []float64
		for trial := range env.Trials {
			t, err := fencecost.Measure(ctx, p.Pair, window)
			if err != nil {
				return rows, err
			}
			ratios = append(ratios, t.Ratio())
			fenced = append(fenced, t.FencedRate())
			unfenced = append(unfenced, t.UnfencedRate())
			cost = append(cost, t.CostPercent())
			env.Logf("shardbench: commit-throughput %s, %s, trial %d: fenced %.0f/s, unfenced %.0f/s, ratio %.3f (%d iterations)",
				b.system, p.mode, trial+1, t.FencedRate(), t.UnfencedRate(), t.Ratio(), t.Iterations)
		}
		row := bench.Measured("commit-throughput", b.system, "fenced ÷ unfenced commits/s, "+p.mode, "ratio", ratios).
			With("fenced_commits_per_s_p50", bench.Percentile(fenced, 50)).
			With("unfenced_commits_per_s_p50", bench.Percentile(unfenced, 50)).
			With("fence_cost_percent_p50", bench.Percentile(cost, 50))
		row = row.WithGoal(fmt.Sprintf("p50 >= %.1f", commitGoal), row.P50 >= commitGoal)
		rows = append(rows, row)
	}
	return rows, nil
}

func openMemoryPairs(context.Context, *bench.Env) (commitBackend, error) {
	p, closeStore := fencecost.Memory()
	return commitBackend{system: "memory", pairs: modes("", p), close: closeStore}, nil
}

func openBoltPairs(context.Context, *bench.Env) (commitBackend, error) {
	dir, err := os.MkdirTemp("", "shardbench-bolt-")
	if err != nil {
		return commitBackend{}, err
	}
	p, closeStore, err := fencecost.Bolt(dir)
	if err != nil {
		os.RemoveAll(dir)
		return commitBackend{}, err
	}
	return commitBackend{system: "bolt", pairs: modes("", p), close: func() { closeStore(); os.RemoveAll(dir) }}, nil
}

func openConsulPairs(_ context.Context, env *bench.Env) (commitBackend, error) {
	client, err := api.NewClient(env.APIConfig())
	if err != nil {
		return commitBackend{}, err
	}
	prefix := "shardbench/commits-" + bench.RandomHex(4)
	st, err := offconsul.New(offconsul.Config{Client: client, Address: env.Consul.Address, Prefix: prefix})
	if err != nil {
		return commitBackend{}, err
	}
	single, vsTxnSet, batched := fencecost.Consul(st, client)
	pairs := modes("", single, batched)
	pairs = append(pairs, commitPair{mode: "one at a time, unfenced as a set through /v1/txn", Pair: vsTxnSet})
	return commitBackend{system: "consul", pairs: pairs, close: func() {
		_ = st.Close()
		_, _ = client.KV().DeleteTree(prefix+"/", nil)
	}}, nil
}

// openPostgresPairs uses --postgres, or a throwaway cluster. The table is
// the run's own and is dropped after. Each pair runs twice: with the
// server's durability (every commit waits for its WAL flush, so the disk's
// fsync dominates) and with synchronous_commit=off for the benchmark's
// connections, which leaves the statements' own cost to compare.
func openPostgresPairs(ctx context.Context, env *bench.Env) (commitBackend, error) {
	dsn, stop := env.PostgresDSN, func() {}
	if dsn == "" {
		srv, err := pgtest.Launch()
		if err != nil {
			return commitBackend{}, fmt.Errorf("no --postgres given, and starting a throwaway PostgreSQL failed: %w", err)
		}
		dsn, stop = srv.DSN("postgres"), func() { _ = srv.Close() }
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	table := "shardbench_offsets_" + bench.RandomHex(4)
	durable, err := postgres.Open(octx, postgres.Config{DSN: dsn, Table: table})
	if err != nil {
		stop()
		return commitBackend{}, err
	}
	async, err := postgres.Open(octx, postgres.Config{DSN: bench.DSNParam(dsn, "synchronous_commit", "off"), Table: table})
	if err != nil {
		_ = durable.Close()
		stop()
		return commitBackend{}, fmt.Errorf("with synchronous_commit=off: %w", err)
	}
	ds, db := fencecost.Postgres(durable)
	as, ab := fencecost.Postgres(async)
	pairs := append(modes("", ds, db), modes(", synchronous_commit=off", as, ab)...)
	return commitBackend{system: "postgres", pairs: pairs, close: func() {
		_, _ = durable.Pool().Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+durable.Table())
		_ = async.Close()
		_ = durable.Close()
		stop()
	}}, nil
}
