package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
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

// consulSteady measures one fleet of n shards: its cold start, then one
// steady-state window.
func consulSteady(ctx context.Context, o steadyOptions, n int, progress io.Writer) (steadyResult, error) {
	f, r, err := coldStart(ctx, o, n, progress)
	if err != nil {
		return r, err
	}
	defer f.close()
	fmt.Fprintf(progress, "consul-steady: %d shards owned by %d workers after %.2fs; measuring %v of steady state …\n",
		n, o.workers, r.ColdStartSeconds, o.window)
	// Let hand-offs in flight finish, then count a window.
	time.Sleep(o.policy.RenewEvery)
	if r.RequestsPerWorker, r.ByEndpoint, r.WindowSeconds, err = f.window(ctx, o.window); err != nil {
		return r, err
	}
	if !f.converged(ctx) {
		fmt.Fprintf(progress, "consul-steady: warning: the fleet was not converged at the end of the window\n")
	}
	return r, nil
}

// steadyFleet is a fleet of workers in this process, each with its own
// Consul client, session, request counter and acquire counter.
type steadyFleet struct {
	n, want  int
	observer *procfleet.Observer
	store    *offmem.Store
	stop     context.CancelFunc
	workers  []*benchWorker
}

// coldStart starts o.workers workers at once over n shards on a fresh
// prefix under o.consul.Prefix and waits until every shard is owned by a
// live worker and their counts differ by at most one. It returns the
// running fleet and the cold start's figures; on error the fleet is
// already closed.
func coldStart(ctx context.Context, o steadyOptions, n int, progress io.Writer) (*steadyFleet, steadyResult, error) {
	cfg := o.consul
	cfg.Prefix = fmt.Sprintf("%s/steady-%d-%s", o.consul.Prefix, n, bench.RandomHex(4))
	r := steadyResult{Shards: n, Workers: o.workers, Prefix: cfg.Prefix, Liveness: string(cfg.Liveness), Policy: o.policy}
	if r.Liveness == "" {
		r.Liveness = string(consul.LivenessCheck)
	}
	observer, err := procfleet.NewObserver(cfg)
	if err != nil {
		return nil, r, err
	}
	snap, err := observer.Snapshot(ctx, 0)
	if err != nil {
		observer.Close()
		return nil, r, fmt.Errorf("reading %s: %w", cfg.Prefix, err)
	}

	reg := prometheus.NewRegistry()
	f := &steadyFleet{n: n, want: o.workers, observer: observer, store: offmem.New()}
	wctx, stop := context.WithCancel(ctx)
	f.stop = stop
	fleet := shard.Config{Shards: n}
	start := time.Now()
	for i := range o.workers {
		bw := &benchWorker{requests: &consul.RequestCounter{}, done: make(chan error, 1)}
		wcfg := cfg
		wcfg.WrapTransport = bw.requests.Wrap
		if bw.coord, err = consul.New(wcfg); err != nil {
			f.close()
			return nil, r, err
		}
		bw.acquires = &acquireCounter{Coordinator: bw.coord}
		id := workerName(i)
		bw.w, err = worker.New(worker.Config{
			ID: id, Fleet: fleet, Coordinator: bw.acquires, Offsets: f.store, Policy: o.policy,
			// The handler holds the shard and does nothing else: the
			// figures are the coordination's own.
			Handler:    worker.HandlerFunc(func(ctx context.Context, _ *worker.Claim) error { <-ctx.Done(); return nil }),
			Registerer: reg,
		})
		if err != nil {
			bw.coord.Close()
			f.close()
			return nil, r, err
		}
		f.workers = append(f.workers, bw)
		go func() { bw.done <- bw.w.Run(wctx) }()
	}

	// The observer follows the prefix with blocking queries, as the
	// workers do: polling a large prefix would itself load the agent.
	lastReport := start
	for !converged(snap, n, o.workers) {
		if time.Since(start) > o.converge {
			owned, spread := ownership(snap)
			f.count(&r, reg)
			f.close()
			return nil, r, fmt.Errorf("%w after %v (%d of %d shards owned by live workers, max−min %d)", errNotConverged, o.converge, owned, n, spread)
		}
		octx, cancel := context.WithTimeout(ctx, time.Until(start.Add(o.converge))+time.Second)
		next, err := observer.Snapshot(octx, snap.Index)
		cancel()
		if ctx.Err() != nil {
			f.close()
			return nil, r, ctx.Err()
		}
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		snap = next
		if time.Since(lastReport) >= 5*time.Second {
			lastReport = time.Now()
			owned, spread := ownership(snap)
			fmt.Fprintf(progress, "consul-steady: %4.0fs: %d of %d shards owned by live workers, max−min %d\n",
				time.Since(start).Seconds(), owned, n, spread)
		}
	}
	r.ColdStartSeconds = time.Since(start).Seconds()
	f.count(&r, reg)
	return f, r, nil
}

// errNotConverged: a cold start that did not converge in time. The figures
// returned with it are those counted until then.
var errNotConverged = errors.New("not converged")

// count adds the workers' acquire and request counters to r.
func (f *steadyFleet) count(r *steadyResult, reg prometheus.Gatherer) {
	for _, bw := range f.workers {
		bw.acquires.settled()
		r.AcquireCalls += bw.acquires.calls.Load()
		r.ShardsAsked += bw.acquires.asked.Load()
		r.FailedAcquires += bw.acquires.failed()
		r.AcquireErrors += bw.acquires.errors.Load()
		r.ColdRequests += bw.requests.Total()
	}
	r.Moves = int64(sumCounter(reg, "shardlease_rebalance_moves_total"))
}

// window counts every HTTP request the workers send over d (see
// requestRate).
func (f *steadyFleet) window(ctx context.Context, d time.Duration) (perWorker float64, byEndpoint map[string]float64, seconds float64, err error) {
	counters := make([]*consul.RequestCounter, len(f.workers))
	for i, bw := range f.workers {
		counters[i] = bw.requests
	}
	return requestRate(ctx, counters, d)
}

// requestRate counts the requests of every counter (one per worker) over d
// and returns the rate per worker per second, in total and by endpoint, and
// the seconds actually measured.
func requestRate(ctx context.Context, counters []*consul.RequestCounter, d time.Duration) (perWorker float64, byEndpoint map[string]float64, seconds float64, err error) {
	before := make([]map[string]int64, len(counters))
	for i, c := range counters {
		before[i] = c.Counts()
	}
	began := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return 0, nil, 0, ctx.Err()
	}
	seconds = time.Since(began).Seconds()
	byEndpoint = map[string]float64{}
	var total int64
	for i, c := range counters {
		for ep, n := range c.Counts() {
			delta := n - before[i][ep]
			total += delta
			if delta > 0 {
				byEndpoint[ep] += float64(delta) / float64(len(counters)) / seconds
			}
		}
	}
	return float64(total) / float64(len(counters)) / seconds, byEndpoint, seconds, nil
}

// converged reads the prefix once and reports whether the fleet is still
// converged.
func (f *steadyFleet) converged(ctx context.Context) bool {
	snap, err := f.observer.Snapshot(ctx, 0)
	return err == nil && converged(snap, f.n, f.want)
}

// close stops every worker (each drains, releases its shards and destroys
// its session) and deletes the fleet's keys.
func (f *steadyFleet) close() {
	if f.stop != nil {
		f.stop()
	}
	for _, bw := range f.workers {
		<-bw.done
		bw.coord.Close()
	}
	_ = f.observer.DeleteFleet(context.Background())
	f.observer.Close()
	f.store.Close()
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
		fmt.Fprintf(w, "%d shards, steady state per worker per second: %s (liveness %s, renew every %v, window %.0fs)\n",
			r.Shards, endpoints(r.ByEndpoint), r.Liveness, r.Policy.RenewEvery, r.WindowSeconds)
	}
}
