package streame2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/examples/jetstream/pipeline"
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/natstest"
	"github.com/shardlease/shardlease/internal/pgserver"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// streamGoal: fenced ≥ 0.9 × unfenced events/s (issue 18).
const streamGoal = 0.9

const streamSystem = "jetstream+postgres"

// Name is the scenario's name on the command line and in its rows.
const Name = "stream-e2e"

// Params are the fleet and the loads of stream-e2e.
type Params struct {
	Workers, Partitions int
	Backlog             int64         // events per partition, published at once
	Paced               int64         // events per partition, one round per Pace
	Pace                time.Duration // between rounds of the paced load
}

// Sizes are stream-e2e's at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full:  Params{Workers: 12, Partitions: 128, Backlog: 500, Paced: 40, Pace: 200 * time.Millisecond},
	Small: Params{Workers: 3, Partitions: 8, Backlog: 50, Paced: 10, Pace: 50 * time.Millisecond},
}

// Scenario is stream-e2e.
var Scenario = bench.Declare(Name,
	"examples/jetstream's pipeline, a nats-server process → ordered consumers → PostgreSQL, 12 workers × 128 partitions: events/s with FencedTx against the same transaction unfenced, and the latency from publish to committed effect",
	Sizes, run)

// streamRun is one variant's trial.
type streamRun struct {
	eventsPerSec   float64
	eventsPerBatch float64   // over the backlog
	latencies      []float64 // seconds, one per event of the paced load
	refused        int64     // transactions refused by the fence (a lease lost to starvation)
	failed         int64     // transactions failed otherwise
}

func run(ctx context.Context, env *bench.Env, size Params) ([]bench.Result, error) {
	dsn := env.PostgresDSN
	if dsn == "" {
		pg, err := pgserver.Launch()
		if err != nil {
			return nil, fmt.Errorf("no --postgres given, and starting a throwaway PostgreSQL failed: %w", err)
		}
		defer pg.Close()
		dsn = pg.DSN("postgres")
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	var logs [2]jetstream.JetStream // by variant: fenced, unfenced
	for v := range logs {
		ns, err := natstest.Launch()
		if err != nil {
			return nil, err
		}
		defer ns.Close()
		nc, js, err := pipeline.Connect(ns.URL, "shardbench")
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		logs[v] = js
	}

	var runs [2][]streamRun
	var ratios, cost []float64
	for trial := range env.Trials {
		rs, err := runStreams(ctx, logs, pool, dsn, size)
		if err != nil {
			return nil, fmt.Errorf("trial %d: %w", trial+1, err)
		}
		for v, r := range rs {
			runs[v] = append(runs[v], r)
			env.Logf("shardbench: stream-e2e trial %d, %s: %.0f events/s (%.1f events a transaction), latency p50 %.1f ms p99 %.1f ms; %d transactions refused, %d failed",
				trial+1, variantName[v], r.eventsPerSec, r.eventsPerBatch, 1000*bench.Percentile(r.latencies, 50), 1000*bench.Percentile(r.latencies, 99), r.refused, r.failed)
		}
		ratios = append(ratios, rs[0].eventsPerSec/rs[1].eventsPerSec)
		cost = append(cost, 100*(1-rs[0].eventsPerSec/rs[1].eventsPerSec))
	}
	where := fmt.Sprintf("%d workers × %d partitions", size.Workers, size.Partitions)
	each := func(v int, f func(streamRun) float64) []float64 {
		var out []float64
		for _, r := range runs[v] {
			out = append(out, f(r))
		}
		return out
	}
	rate := func(v int) []float64 { return each(v, func(r streamRun) float64 { return r.eventsPerSec }) }
	perBatch := func(v int) []float64 { return each(v, func(r streamRun) float64 { return r.eventsPerBatch }) }
	ratio := bench.Measured(Name, streamSystem, "fenced ÷ unfenced events/s, JetStream → handler → PostgreSQL, "+where, "ratio", ratios).
		With("fenced_events_per_s_p50", bench.Percentile(rate(0), 50)).
		With("unfenced_events_per_s_p50", bench.Percentile(rate(1), 50)).
		With("fence_cost_percent_p50", bench.Percentile(cost, 50)).
		With("fenced_events_per_batch_p50", bench.Percentile(perBatch(0), 50)).
		With("unfenced_events_per_batch_p50", bench.Percentile(perBatch(1), 50)).
		With("fenced_tx_refused_max", slices.Max(each(0, func(r streamRun) float64 { return float64(r.refused) }))).
		With("tx_failed_max", slices.Max(append(each(0, func(r streamRun) float64 { return float64(r.failed) }), each(1, func(r streamRun) float64 { return float64(r.failed) })...))).
		WithNote(fmt.Sprintf("both variants at once, a backlog of %d events per partition each, published while the handlers are held; events ÷ (last effect committed − release)", size.Backlog))
	ratio = ratio.WithGoal(fmt.Sprintf("p50 >= %.1f", streamGoal), ratio.P50 >= streamGoal)
	rows := []bench.Result{ratio}
	for v, name := range []string{"fenced (FencedTx)", "unfenced (a plain transaction)"} {
		rows = append(rows, bench.Measured(Name, streamSystem, "events/s, "+name+", "+where, "events/s", rate(v)))
		var lat []float64
		for _, r := range runs[v] {
			lat = append(lat, r.latencies...)
		}
		row := bench.Measured(Name, streamSystem, "publish → committed effect, "+name+", "+where, "s", lat).
			WithNote(fmt.Sprintf("every event of a steady load, one event per partition every %v; p50/p99/max over the events of all trials", size.Pace))
		row.Trials = len(runs[v])
		rows = append(rows, row)
	}
	return rows, nil
}

// variantName names the variants by index: 0 fenced, 1 unfenced.
var variantName = [2]string{"fenced", "unfenced"}

// runStreams runs one trial of both variants side by side.
func runStreams(ctx context.Context, logs [2]jetstream.JetStream, pool *pgxpool.Pool, dsn string, size Params) ([2]streamRun, error) {
	var out [2]streamRun
	var pipes [2]*streamPipe
	defer func() {
		for _, p := range pipes {
			if p != nil {
				p.close()
			}
		}
	}()
	for v := range pipes {
		p, err := startPipe(ctx, logs[v], pool, dsn, size, v == 1)
		if err != nil {
			return out, fmt.Errorf("%s: %w", variantName[v], err)
		}
		pipes[v] = p
	}
	for v, p := range pipes {
		if err := pipeline.Produce(ctx, p.js, size.Partitions, size.Backlog, 0, nil); err != nil {
			return out, fmt.Errorf("%s: the backlog: %w", variantName[v], err)
		}
	}
	// Release both, and time each until its backlog is committed.
	backlog := int64(size.Partitions) * size.Backlog
	began := time.Now()
	for _, p := range pipes {
		close(p.held)
	}
	var g sync.WaitGroup
	var errs [2]error
	for v, p := range pipes {
		g.Go(func() {
			if errs[v] = waitEvents(ctx, &p.stats, backlog); errs[v] == nil {
				out[v].eventsPerSec = float64(backlog) / time.Since(began).Seconds()
				out[v].eventsPerBatch = float64(backlog) / float64(p.stats.Batches.Load())
			}
		})
	}
	g.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return out, fmt.Errorf("draining the backlogs: %w", err)
	}
	// The paced load, on both at once.
	for v, p := range pipes {
		g.Go(func() {
			errs[v] = pipeline.ProduceFrom(ctx, p.js, size.Partitions, size.Backlog+1, size.Backlog+size.Paced, size.Pace, nil)
			if errs[v] == nil {
				errs[v] = waitEvents(ctx, &p.stats, int64(size.Partitions)*(size.Backlog+size.Paced))
			}
		})
	}
	g.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return out, fmt.Errorf("the paced load: %w", err)
	}
	for v, p := range pipes {
		// No faults are injected, but a worker starved of CPU long enough
		// loses its lease like any other: the old owner's batch is then
		// refused. Counted, not hidden.
		out[v].refused, out[v].failed = p.stats.Stale.Load(), p.stats.Failed.Load()
		p.mu.Lock()
		out[v].latencies = p.latencies
		p.mu.Unlock()
	}
	return out, nil
}

// streamPipe is one variant's pipeline: its stream, schema and fleet, the
// handlers held until held is closed.
type streamPipe struct {
	js      jetstream.JetStream
	stats   pipeline.Stats
	held    chan struct{}
	cancel  context.CancelFunc
	running sync.WaitGroup
	stores  []*postgres.Store
	tables  pipeline.Tables
	pool    *pgxpool.Pool

	mu        sync.Mutex
	latencies []float64 // seconds, the paced load's events
}

// startPipe creates a fresh stream and schema and starts a fleet on them,
// its handlers held, and waits until it has settled.
func startPipe(ctx context.Context, js jetstream.JetStream, pool *pgxpool.Pool, dsn string, size Params, unfenced bool) (*streamPipe, error) {
	p := &streamPipe{js: js, held: make(chan struct{}), pool: pool, tables: pipeline.Tables{Schema: "shardbench_stream_" + bench.RandomHex(4)}}
	ctx, p.cancel = context.WithCancel(ctx)
	if _, err := pipeline.CreateStream(ctx, js); err != nil {
		p.cancel()
		return nil, err
	}
	if err := p.tables.Create(ctx, pool); err != nil {
		p.cancel()
		return nil, err
	}
	fleetCfg := shard.Config{Shards: size.Partitions}
	ids := fleetCfg.IDs()
	part := make(map[shard.ID]int, len(ids))
	for i, id := range ids {
		part[id] = i
	}
	committed := func(evs []pipeline.Event, at time.Time) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, e := range evs {
			if e.N > size.Backlog { // the paced load's
				p.latencies = append(p.latencies, at.Sub(time.Unix(0, e.PublishedNs)).Seconds())
			}
		}
	}
	hold := func(*worker.Claim) pipeline.Resumed { <-p.held; return pipeline.Ran }
	coord := memory.New()
	for i := range size.Workers {
		// 10 connections a worker: two fleets of 12 stay under the
		// throwaway server's max_connections (300).
		st, err := postgres.Open(ctx, postgres.Config{DSN: bench.DSNParam(dsn, "pool_max_conns", "10"), Table: p.tables.Offsets()})
		if err != nil {
			p.close()
			return nil, err
		}
		p.stores = append(p.stores, st)
		w, err := worker.New(worker.Config{
			ID: fmt.Sprintf("w%02d", i+1), Fleet: fleetCfg, Coordinator: coord, Offsets: st, Policy: shard.DefaultPolicy, Logger: zap.NewNop(),
			Handler: &pipeline.Handler{JS: js, Store: st, Pool: st.Pool(), Tables: p.tables, Partition: part,
				Unfenced: unfenced, Stats: &p.stats, Committed: committed, Hooks: pipeline.Hooks{Before: hold}},
		})
		if err != nil {
			p.close()
			return nil, err
		}
		p.running.Go(func() { _ = w.Run(ctx) })
	}
	if err := waitAllOwned(ctx, coord, len(ids), size.Workers); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// close stops the fleet, closes its stores and drops its schema.
func (p *streamPipe) close() {
	p.cancel()
	select {
	case <-p.held:
	default:
		close(p.held)
	}
	p.running.Wait()
	for _, st := range p.stores {
		_ = st.Close()
	}
	_ = p.tables.Drop(context.Background(), p.pool)
}

// waitAllOwned waits until every shard is owned, every worker owns some,
// max − min ≤ 1, and no shard has changed hands for a second: a hand-off
// while the handlers are held would wait out the drain timeout and fail
// the run. It follows the fleet (shard.Follow), looking again a second
// after the last move when nothing changes.
func waitAllOwned(ctx context.Context, coord *memory.Coordinator, shards, workers int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last map[shard.ID]string
	var since time.Time
	settled := false
	err := shard.Follow(ctx, coord.Fleet().Watch, shard.FollowOptions{OnError: func(error) bool { return false }}, func(snap shard.Snapshot) (time.Time, error) {
		owners, counts := snap.Owners(), snap.Counts()
		spread := 0
		if len(counts) > 0 {
			lo, hi := shards, 0
			for _, n := range counts {
				lo, hi = min(lo, n), max(hi, n)
			}
			spread = hi - lo
		}
		switch {
		case len(owners) != shards || len(counts) != workers || spread > 1:
			last = nil
			return time.Time{}, nil
		case !maps.Equal(owners, last):
			last, since = owners, time.Now()
		case time.Since(since) >= time.Second:
			settled = true
			return time.Time{}, shard.ErrStopFollowing
		}
		return since.Add(time.Second), nil
	})
	switch {
	case err != nil:
		return err
	case !settled:
		return errors.New("the fleet did not settle (every shard owned, max − min ≤ 1, nothing moving for 1 s) within a minute")
	}
	return nil
}

// waitEvents waits until the handlers have committed n events.
func waitEvents(ctx context.Context, stats *pipeline.Stats, n int64) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for stats.Events.Load() < n {
		if !pipeline.Sleep(ctx, 5*time.Millisecond) {
			return fmt.Errorf("%d of %d events committed after 5 minutes", stats.Events.Load(), n)
		}
	}
	return nil
}
