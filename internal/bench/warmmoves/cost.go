package warmmoves

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/steady"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// costFigures are the windows of one number of standbys per shard.
type costFigures struct {
	requests []float64 // Consul requests per worker per second
	cpu      []float64 // the process's CPU per worker, cores
	standby  []float64 // standbys running ÷ handlers running, sampled
	byEP     map[string]float64
}

func runCost(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	var fig [2]costFigures
	err := costWindows(ctx, env, p, &fig)
	if len(fig[0].requests) == 0 {
		return nil, err
	}
	w, n := p.Fleet.Workers, p.Fleet.Shards
	common := func(r bench.Result, k int) bench.Result {
		r = r.WithPolicy(bench.PolicyDefault, shard.DefaultPolicy).
			WithNote(fmt.Sprintf("%d in-process workers × %d shards on Consul, each shard's handler with a standby side, committing every second, its state %v to restore; %s; one %v window per trial",
				w, n, p.Restore, costNote(k), p.CostWindow))
		if err != nil {
			r = r.WithNote(fmt.Sprintf("only %d windows: %v", len(fig[k].requests), err))
		}
		return r
	}
	var rows []bench.Result
	for k := range fig {
		f := &fig[k]
		if len(f.requests) == 0 {
			continue
		}
		req := common(bench.Measured(Name, bench.SystemShardlease, "Consul requests per worker per second, "+costNote(k), "requests/s", f.requests), k).
			WithNote("by endpoint, per worker per second, in the last window: " + steady.Endpoints(f.byEP))
		cpu := common(bench.Measured(Name, bench.SystemShardlease, "CPU of the workers' process per worker, "+costNote(k), "cores", f.cpu), k)
		if k == 0 {
			// Two requests per renewal (the check's update and the session's
			// read, docs/benchmarks.md "Coordinator load"), with 5 % for a
			// renewal at a window's edge: a standby side adds nothing.
			limit := 1.05 * 2 / shard.DefaultPolicy.RenewEvery.Seconds()
			req = req.WithGoal(fmt.Sprintf("p99 <= %.3g (two per renewal of %v, 5 %% for a renewal at a window's edge)", limit, shard.DefaultPolicy.RenewEvery),
				req.P99 <= limit)
		} else {
			base, baseCPU := bench.Percentile(fig[0].requests, 50), bench.Percentile(fig[0].cpu, 50)
			req = req.With("ratio_to_no_standbys_p50", req.P50/base)
			cpu = cpu.With("ratio_to_no_standbys_p50", cpu.P50/baseCPU)
		}
		rows = append(rows, req, cpu)
		if k == 1 {
			rows = append(rows, common(bench.Measured(Name, bench.SystemShardlease, "standby handlers running per owner's handler, "+costNote(k), "ratio", f.standby), k).
				WithNote("sampled every 100 ms over each window: the handler goroutines standbys add, as a share of the owners' (what they cost in CPU is the CPU row's difference)"))
		}
	}
	return rows, err
}

// costNote names a cost row's standbys.
func costNote(k int) string {
	if k == 0 {
		return "no standbys"
	}
	return "one standby per shard"
}

// costWindows starts an in-process fleet with the restoring handler,
// measures windows with no standbys, then with one per shard.
func costWindows(ctx context.Context, env *bench.Env, p Params, fig *[2]costFigures) error {
	h := &restoring{restore: p.Restore, commitEvery: time.Second}
	o := steady.Options{Consul: env.CoordConfig("shardbench/" + Name), Workers: p.Fleet.Workers,
		Policy: shard.DefaultPolicy, Converge: 3 * time.Minute, Handler: h}
	f, cold, err := steady.ColdStart(ctx, o, p.Fleet.Shards, env.Log)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := consul.New(env.CoordConfig(cold.Prefix))
	if err != nil {
		return err
	}
	defer c.Close()
	op := admin.Operator{Coordinator: c, Name: cold.Prefix, By: "shardbench"}
	for k := range fig {
		if err := setStandbys(ctx, op, k); err != nil {
			return err
		}
		if err := standbysReady(ctx, op, k); err != nil {
			return err
		}
		// Let the burst of the standbys' start pass.
		if !wait(ctx, p.CostSettle) {
			return ctx.Err()
		}
		for t := range trials(env, p) {
			if err := fig[k].window(ctx, f, h, p); err != nil {
				return fmt.Errorf("%d standbys, window %d: %w", k, t+1, err)
			}
			env.Logf("shardbench: %s: %d standbys per shard, window %d: %.3f requests per worker per second, %.4f cores per worker, %.2f standbys per handler",
				Name, k, t+1, fig[k].requests[t], fig[k].cpu[t], fig[k].standby[t])
		}
	}
	return nil
}

// window measures one window of p.CostWindow.
func (c *costFigures) window(ctx context.Context, f *steady.Fleet, h *restoring, p Params) error {
	sampled := make(chan float64, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() {
		var owners, standbys int64
		for wait(sctx, 100*time.Millisecond) {
			owners += h.owners.Load()
			standbys += h.standbys.Load()
		}
		sampled <- float64(standbys) / float64(max(owners, 1))
	}()
	cpu0 := cpuTime()
	rate, byEP, seconds, err := f.Window(ctx, p.CostWindow)
	cpu := cpuTime() - cpu0
	stop()
	share := <-sampled
	if err != nil {
		return err
	}
	c.requests = append(c.requests, rate)
	c.cpu = append(c.cpu, cpu.Seconds()/seconds/float64(p.Fleet.Workers))
	c.standby = append(c.standby, share)
	c.byEP = byEP
	return nil
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
