package steady

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/worker"
)

// Options configure consul-steady, and the cold starts of cold-start and
// coordinator-load.
type Options struct {
	Consul   consul.Config // Prefix is the parent of each run's fresh prefix
	Workers  int
	Shards   []int         // one fleet each (Measure's caller's loop)
	Window   time.Duration // the steady-state window Measure counts
	Policy   shard.LeasePolicy
	Converge time.Duration // give up on a cold start after this long
	// Handler is every worker's; nil: one that holds the shard and does
	// nothing else, so that the figures are the coordination's own.
	Handler worker.Handler
}

// Result is one fleet's figures.
type Result struct {
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

// Measure measures one fleet of n shards: its cold start, then one
// steady-state window.
func Measure(ctx context.Context, o Options, n int, progress io.Writer) (Result, error) {
	f, r, err := ColdStart(ctx, o, n, progress)
	if err != nil {
		return r, err
	}
	defer f.Close()
	fmt.Fprintf(progress, "consul-steady: %d shards owned by %d workers after %.2fs; measuring %v of steady state …\n",
		n, o.Workers, r.ColdStartSeconds, o.Window)
	// Let hand-offs in flight finish, then count a window.
	time.Sleep(o.Policy.RenewEvery)
	if r.RequestsPerWorker, r.ByEndpoint, r.WindowSeconds, err = f.Window(ctx, o.Window); err != nil {
		return r, err
	}
	if !f.Converged(ctx) {
		fmt.Fprintf(progress, "consul-steady: warning: the fleet was not converged at the end of the window\n")
	}
	return r, nil
}

// Print writes the figures of consul-steady's fleets as a table.
func Print(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shards\tworkers\tcold start\tacquire calls\tfailed acquires\tmoves\treq/worker/s (steady)\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%d\t%.2fs\t%d\t%d\t%d\t%.3f\t\n", r.Shards, r.Workers, r.ColdStartSeconds, r.AcquireCalls, r.FailedAcquires, r.Moves, r.RequestsPerWorker)
	}
	tw.Flush()
	for _, r := range rs {
		fmt.Fprintf(w, "%d shards, steady state per worker per second: %s (liveness %s, renew every %v, window %.0fs)\n",
			r.Shards, Endpoints(r.ByEndpoint), r.Liveness, r.Policy.RenewEvery, r.WindowSeconds)
	}
}

// Endpoints formats a rate per endpoint for a progress line.
func Endpoints(byEP map[string]float64) string {
	eps := make([]string, 0, len(byEP))
	for ep := range byEP {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	parts := make([]string, len(eps))
	for i, ep := range eps {
		parts[i] = fmt.Sprintf("%s %.3f", ep, byEP[ep])
	}
	return strings.Join(parts, ", ")
}
