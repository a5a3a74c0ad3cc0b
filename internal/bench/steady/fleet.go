package steady

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/reqcount"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/worker"
)

// benchWorker is one worker of a consul-steady fleet.
type benchWorker struct {
	w        *worker.Worker
	coord    *consul.Coordinator
	requests *consul.RequestCounter
	acquires *acquireCounter
	done     chan error
}

// Fleet is a fleet of workers in this process, each with its own
// Consul client, session, request counter and acquire counter.
type Fleet struct {
	n, want  int
	observer *procfleet.Observer
	store    *offmem.Store
	stop     context.CancelFunc
	workers  []*benchWorker
}

// ColdStart starts o.Workers workers at once over n shards on a fresh
// prefix under o.Consul.Prefix and waits until every shard is owned by a
// live worker and their counts differ by at most one. It returns the
// running fleet and the cold start's figures; on error the fleet is
// already closed.
func ColdStart(ctx context.Context, o Options, n int, progress io.Writer) (*Fleet, Result, error) {
	cfg := o.Consul
	cfg.Prefix = fmt.Sprintf("%s/steady-%d-%s", o.Consul.Prefix, n, bench.RandomHex(4))
	r := Result{Shards: n, Workers: o.Workers, Prefix: cfg.Prefix, Liveness: string(cfg.Liveness), Policy: o.Policy}
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
	f := &Fleet{n: n, want: o.Workers, observer: observer, store: offmem.New()}
	wctx, stop := context.WithCancel(ctx)
	f.stop = stop
	fleet := shard.Config{Shards: n}
	handler := o.Handler
	if handler == nil {
		handler = worker.HandlerFunc(func(ctx context.Context, _ *worker.Claim) error { <-ctx.Done(); return nil })
	}
	start := time.Now()
	for i := range o.Workers {
		bw := &benchWorker{requests: &consul.RequestCounter{}, done: make(chan error, 1)}
		wcfg := cfg
		wcfg.WrapTransport = bw.requests.Wrap
		if bw.coord, err = consul.New(wcfg); err != nil {
			f.Close()
			return nil, r, err
		}
		bw.acquires = countAcquires(bw.coord)
		id := WorkerName(i)
		bw.w, err = worker.New(worker.Config{
			ID: id, Fleet: fleet, Coordinator: bw.acquires, Offsets: f.store, LocalOffsets: true, Logger: zap.NewNop(), Policy: o.Policy,
			Handler: handler, Registerer: reg,
		})
		if err != nil {
			bw.coord.Close()
			f.Close()
			return nil, r, err
		}
		f.workers = append(f.workers, bw)
		go func() { bw.done <- bw.w.Run(wctx) }()
	}

	// The observer follows the prefix with blocking queries, as the
	// workers do: polling a large prefix would itself load the agent.
	lastReport := start
	if !converged(snap, n, o.Workers) {
		octx, cancel := context.WithDeadline(ctx, start.Add(o.Converge+time.Second))
		_ = shard.Follow(octx, observer.Snapshot, shard.FollowOptions{After: snap.Index}, func(next shard.Snapshot) (time.Time, error) {
			snap = next
			if converged(snap, n, o.Workers) || time.Since(start) > o.Converge {
				return time.Time{}, shard.ErrStopFollowing
			}
			if time.Since(lastReport) >= 5*time.Second {
				lastReport = time.Now()
				owned, spread, _ := ownership(snap)
				fmt.Fprintf(progress, "consul-steady: %4.0fs: %d of %d shards owned by live workers, max−min %d\n",
					time.Since(start).Seconds(), owned, n, spread)
			}
			return time.Time{}, nil
		})
		cancel()
	}
	if ctx.Err() != nil {
		f.Close()
		return nil, r, ctx.Err()
	}
	if !converged(snap, n, o.Workers) {
		owned, spread, _ := ownership(snap)
		f.count(&r, reg)
		f.Close()
		return nil, r, fmt.Errorf("%w after %v (%d of %d shards owned by live workers, max−min %d)", ErrNotConverged, o.Converge, owned, n, spread)
	}
	r.ColdStartSeconds = time.Since(start).Seconds()
	f.count(&r, reg)
	return f, r, nil
}

// ErrNotConverged: a cold start that did not converge in time. The figures
// returned with it are those counted until then.
var ErrNotConverged = errors.New("not converged")

// count adds the workers' acquire and request counters to r.
func (f *Fleet) count(r *Result, reg prometheus.Gatherer) {
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

// Window counts every HTTP request the workers send over d (see
// requestRate).
func (f *Fleet) Window(ctx context.Context, d time.Duration) (perWorker float64, byEndpoint map[string]float64, seconds float64, err error) {
	counters := make([]*reqcount.Counter, len(f.workers))
	for i, bw := range f.workers {
		counters[i] = &bw.requests.Counter
	}
	return RequestRate(ctx, counters, d)
}

// RequestRate counts the requests of every counter (one per worker) over d
// and returns the rate per worker per second, in total and by endpoint, and
// the seconds actually measured.
func RequestRate(ctx context.Context, counters []*reqcount.Counter, d time.Duration) (perWorker float64, byEndpoint map[string]float64, seconds float64, err error) {
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

// Converged reads the prefix once and reports whether the fleet is still
// converged.
func (f *Fleet) Converged(ctx context.Context) bool {
	snap, err := f.observer.Snapshot(ctx, 0)
	return err == nil && converged(snap, f.n, f.want)
}

// Close stops every worker (each drains, releases its shards and destroys
// its session) and deletes the fleet's keys.
func (f *Fleet) Close() {
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

// ownership returns how many shards live members hold, the spread of
// their counts, and how many live members there are.
func ownership(s shard.Snapshot) (owned, spread, live int) {
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
		return owned, 0, 0
	}
	ns := make([]int, 0, len(counts))
	for _, c := range counts {
		ns = append(ns, c)
	}
	return owned, slices.Max(ns) - slices.Min(ns), len(counts)
}

// converged: every shard is held by a live member, there are want live
// members, and their counts differ by at most one.
func converged(s shard.Snapshot, shards, want int) bool {
	owned, spread, live := ownership(s)
	return owned == shards && live == want && spread <= 1
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

// Totals returns every worker's request count so far, in f.workers order.
func (f *Fleet) Totals() []int64 {
	out := make([]int64, len(f.workers))
	for i, bw := range f.workers {
		out[i] = bw.requests.Total()
	}
	return out
}

// Assignor returns the index in f.workers of the worker holding
// P/assignor, or -1 while nobody does.
func (f *Fleet) Assignor(ctx context.Context) (int, error) {
	holder, err := f.observer.AssignorWorker(ctx, false)
	if err != nil {
		return -1, err
	}
	for i := range f.workers {
		if WorkerName(i) == holder {
			return i, nil
		}
	}
	return -1, nil
}

// WorkerName is the ID ColdStart gives its i-th worker (from 0).
func WorkerName(i int) string { return fmt.Sprintf("bench-%02d", i+1) }
