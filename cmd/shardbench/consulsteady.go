package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/worker"
)

// steadyOptions configure consul-steady.
type steadyOptions struct {
	consul   consul.Config // Prefix is the parent of each run's fresh prefix
	workers  int
	shards   []int
	window   time.Duration
	policy   shard.LeasePolicy
	converge time.Duration // give up on a cold start after this long
}

// steadyResult is one fleet's figures.
type steadyResult struct {
	Shards  int    `json:"shards"`
	Workers int    `json:"workers"`
	Prefix  string `json:"prefix"`
	// Cold start: every worker started at once on an empty prefix, until
	// every shard is owned by a live worker and counts differ by ≤ 1.
	ColdStartSeconds float64 `json:"cold_start_s"`
	AcquireCalls     int64   `json:"acquire_calls"`
	ShardsAsked      int64   `json:"shards_asked"`
	FailedAcquires   int64   `json:"failed_acquire_attempts"` // asked for, not granted
	AcquireErrors    int64   `json:"acquire_errors"`
	Moves            int64   `json:"rebalance_moves"`
	ColdRequests     int64   `json:"cold_start_requests"` // all workers
	// Steady state: Consul HTTP requests over the window, per worker per
	// second, in total and by endpoint.
	WindowSeconds     float64            `json:"window_s"`
	RequestsPerWorker float64            `json:"requests_per_worker_per_s"`
	ByEndpoint        map[string]float64 `json:"by_endpoint_per_worker_per_s"`
	Liveness          string             `json:"liveness"`
	Policy            shard.LeasePolicy  `json:"policy"`
}

func consulSteadyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardbench consul-steady", flag.ContinueOnError)
	o := steadyOptions{consul: consul.DefaultConfig(), policy: shard.DefaultPolicy}
	o.consul.RegisterFlags(fs)
	fs.StringVar(&o.consul.Prefix, "prefix", "shardbench", "KV prefix under which each run gets a fresh fleet prefix")
	fs.IntVar(&o.workers, "workers", 12, "workers in each fleet (in this process, each with its own Consul client and session)")
	shards := fs.String("shards", "128,4096", "comma-separated shard counts, one fleet each")
	fs.DurationVar(&o.window, "window", 30*time.Second, "steady-state measurement window")
	fs.DurationVar(&o.converge, "converge-timeout", 2*time.Minute, "give up on a cold start after this long")
	fs.DurationVar(&o.policy.TTL, "ttl", o.policy.TTL, "session TTL")
	fs.DurationVar(&o.policy.RenewEvery, "renew", o.policy.RenewEvery, "renewal interval")
	fs.DurationVar(&o.policy.PauseBudget, "pause-budget", o.policy.PauseBudget, "pause budget")
	asJSON := fs.Bool("json", false, "print one JSON object per fleet instead of a table")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardbench consul-steady [flags]

Starts, for each shard count, a fresh fleet of workers on Consul at once and
reports how long they take to own every shard within one of each other and
how many acquire attempts failed; then counts every HTTP request each
worker sends to Consul over a steady-state window. One session per worker
and one blocking watch per worker: the steady rate must not grow with the
shard count. Run it against an agent of its own (bin/consul agent -dev).

`)
		fs.PrintDefaults()
	}
	if ok, code := parse(fs, args, stderr); !ok {
		return code
	}
	var problems []error
	for _, s := range strings.Split(*shards, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > shard.MaxShards {
			problems = append(problems, fmt.Errorf("--shards %q: want comma-separated counts in 1..%d", *shards, shard.MaxShards))
			break
		}
		o.shards = append(o.shards, n)
	}
	if o.workers < 1 {
		problems = append(problems, fmt.Errorf("--workers %d: want at least 1", o.workers))
	}
	if o.window <= 0 {
		problems = append(problems, fmt.Errorf("--window %v must be positive", o.window))
	}
	if err := o.policy.Validate(); err != nil {
		problems = append(problems, fmt.Errorf("--ttl/--renew/--pause-budget: %w", err))
	}
	if err := o.consul.Validate(); err != nil {
		problems = append(problems, err)
	}
	if err := errors.Join(problems...); err != nil {
		fmt.Fprintf(stderr, "shardbench consul-steady: %v\n", err)
		return exitBadInvoke
	}

	var results []steadyResult
	for _, n := range o.shards {
		fmt.Fprintf(stderr, "consul-steady: %d workers over %d shards on %s …\n", o.workers, n, o.consul.Address)
		r, err := consulSteady(ctx, o, n, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "shardbench consul-steady: %d shards: %v\n", n, err)
			return exitFailed
		}
		results = append(results, r)
		if *asJSON {
			printJSON(stdout, r)
		}
	}
	if !*asJSON {
		printSteady(stdout, results)
	}
	return exitOK
}

// benchWorker is one worker of a consul-steady fleet.
type benchWorker struct {
	w        *worker.Worker
	coord    *consul.Coordinator
	requests *consul.RequestCounter
	acquires *acquireCounter
	done     chan error
}

// consulSteady measures one fleet of n shards.
func consulSteady(ctx context.Context, o steadyOptions, n int, progress io.Writer) (steadyResult, error) {
	cfg := o.consul
	cfg.Prefix = fmt.Sprintf("%s/steady-%d-%s", o.consul.Prefix, n, randomHex(4))
	r := steadyResult{Shards: n, Workers: o.workers, Prefix: cfg.Prefix, Liveness: string(cfg.Liveness), Policy: o.policy}
	if r.Liveness == "" {
		r.Liveness = string(consul.LivenessCheck)
	}
	observer, err := consul.New(cfg)
	if err != nil {
		return r, err
	}
	defer observer.Close()
	if _, err := observer.Watch(ctx, 0); err != nil {
		return r, fmt.Errorf("reading %s: %w", cfg.Prefix, err)
	}

	reg := prometheus.NewRegistry()
	store := offmem.New()
	defer store.Close()
	fleet := shard.Config{Shards: n}
	wctx, stop := context.WithCancel(ctx)
	var workers []*benchWorker
	defer func() {
		stop()
		for _, bw := range workers {
			<-bw.done
			bw.coord.Close()
		}
	}()
	start := time.Now()
	for i := range o.workers {
		bw := &benchWorker{requests: &consul.RequestCounter{}, done: make(chan error, 1)}
		wcfg := cfg
		wcfg.WrapTransport = bw.requests.Wrap
		if bw.coord, err = consul.New(wcfg); err != nil {
			return r, err
		}
		bw.acquires = &acquireCounter{Coordinator: bw.coord}
		id := fmt.Sprintf("bench-%02d", i+1)
		bw.w, err = worker.New(worker.Config{
			ID: id, Fleet: fleet, Coordinator: bw.acquires, Offsets: store, Policy: o.policy,
			// The handler holds the shard and does nothing else: the
			// figures are the coordination's own.
			Handler:    worker.HandlerFunc(func(ctx context.Context, _ *worker.Claim) error { <-ctx.Done(); return nil }),
			Registerer: reg,
		})
		if err != nil {
			bw.coord.Close()
			return r, err
		}
		workers = append(workers, bw)
		go func() { bw.done <- bw.w.Run(wctx) }()
	}

	// Cold start.
	lastReport := start
	for {
		snap, err := observer.Watch(ctx, 0)
		if err == nil && converged(snap, n, o.workers) {
			break
		}
		if err == nil && time.Since(lastReport) >= 5*time.Second {
			lastReport = time.Now()
			owned, spread := ownership(snap)
			fmt.Fprintf(progress, "consul-steady: %4.0fs: %d of %d shards owned by live workers, max−min %d\n",
				time.Since(start).Seconds(), owned, n, spread)
		}
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		if time.Since(start) > o.converge {
			return r, fmt.Errorf("not converged after %v", o.converge)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.ColdStartSeconds = time.Since(start).Seconds()
	for _, bw := range workers {
		bw.acquires.settled()
		r.AcquireCalls += bw.acquires.calls.Load()
		r.ShardsAsked += bw.acquires.asked.Load()
		r.FailedAcquires += bw.acquires.failed()
		r.AcquireErrors += bw.acquires.errors.Load()
		r.ColdRequests += bw.requests.Total()
	}
	r.Moves = int64(sumCounter(reg, "shardlease_rebalance_moves_total"))
	fmt.Fprintf(progress, "consul-steady: %d shards owned by %d workers after %.2fs; measuring %v of steady state …\n",
		n, o.workers, r.ColdStartSeconds, o.window)

	// Steady state: let hand-offs in flight finish, then count a window.
	time.Sleep(o.policy.RenewEvery)
	before := make([]map[string]int64, len(workers))
	for i, bw := range workers {
		before[i] = bw.requests.Counts()
	}
	began := time.Now()
	select {
	case <-time.After(o.window):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	elapsed := time.Since(began).Seconds()
	r.WindowSeconds = elapsed
	r.ByEndpoint = map[string]float64{}
	var total int64
	for i, bw := range workers {
		for ep, c := range bw.requests.Counts() {
			d := c - before[i][ep]
			total += d
			if d > 0 {
				r.ByEndpoint[ep] += float64(d) / float64(o.workers) / elapsed
			}
		}
	}
	r.RequestsPerWorker = float64(total) / float64(o.workers) / elapsed
	if snap, err := observer.Watch(ctx, 0); err == nil && !converged(snap, n, o.workers) {
		fmt.Fprintf(progress, "consul-steady: warning: the fleet was not converged at the end of the window\n")
	}
	return r, nil
}

// ownership returns how many shards live members hold and the spread of
// their counts.
func ownership(s shard.Snapshot) (owned, spread int) {
	counts := map[shard.SessionID]int{}
	for _, m := range s.Members {
		if m.Live() {
			counts[m.Session] = 0
		}
	}
	for _, st := range s.Shards {
		if _, ok := counts[st.Session]; ok && st.Held() {
			counts[st.Session]++
			owned++
		}
	}
	if len(counts) == 0 {
		return owned, 0
	}
	ns := make([]int, 0, len(counts))
	for _, c := range counts {
		ns = append(ns, c)
	}
	return owned, slices.Max(ns) - slices.Min(ns)
}

// converged: every shard is held by a live member, there are want live
// members, and their counts differ by at most one.
func converged(s shard.Snapshot, shards, want int) bool {
	counts := map[shard.SessionID]int{}
	for _, m := range s.Members {
		if m.Live() {
			counts[m.Session] = 0
		}
	}
	owned := 0
	for _, st := range s.Shards {
		if _, ok := counts[st.Session]; ok && st.Held() {
			counts[st.Session]++
			owned++
		}
	}
	if owned != shards || len(counts) != want {
		return false
	}
	ns := make([]int, 0, len(counts))
	for _, c := range counts {
		ns = append(ns, c)
	}
	return slices.Max(ns)-slices.Min(ns) <= 1
}

func sumCounter(g prometheus.Gatherer, name string) float64 {
	families, err := g.Gather()
	if err != nil {
		return 0
	}
	var sum float64
	for _, mf := range families {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func printSteady(w io.Writer, rs []steadyResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shards\tworkers\tcold start\tacquire calls\tfailed acquires\tmoves\treq/worker/s (steady)\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%d\t%.2fs\t%d\t%d\t%d\t%.3f\t\n", r.Shards, r.Workers, r.ColdStartSeconds, r.AcquireCalls, r.FailedAcquires, r.Moves, r.RequestsPerWorker)
	}
	tw.Flush()
	for _, r := range rs {
		eps := make([]string, 0, len(r.ByEndpoint))
		for ep := range r.ByEndpoint {
			eps = append(eps, ep)
		}
		sort.Strings(eps)
		var parts []string
		for _, ep := range eps {
			parts = append(parts, fmt.Sprintf("%s %.3f", ep, r.ByEndpoint[ep]))
		}
		fmt.Fprintf(w, "%d shards, steady state per worker per second: %s (liveness %s, renew every %v, window %.0fs)\n",
			r.Shards, strings.Join(parts, ", "), r.Liveness, r.Policy.RenewEvery, r.WindowSeconds)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
