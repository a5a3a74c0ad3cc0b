package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shardlease/shardlease/examples/jetstream/pipeline"
	"github.com/shardlease/shardlease/internal/harness/natstest"
	"github.com/shardlease/shardlease/internal/pgserver"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// stream-e2e: examples/jetstream's pipeline (a real nats-server process →
// an ordered consumer per owned partition → each batch's effects and
// offset in one PostgreSQL transaction) with FencedTx, and the same
// pipeline with the fence left out (a plain transaction, the offset
// upserted without its token), in one run, alternating which goes first.
// Each trial of each variant: a fresh stream and schema, the fleet started
// and every shard owned; then a backlog is published while every handler
// is held before its first transaction, and released — the throughput is
// the backlog's events ÷ (last effect committed − release), batches of up
// to pipeline.DefaultBatch — then a steady paced load, whose events give
// the latency from publish to committed effect (batches of one or two
// events: the fence's cost per transaction shows there).

// streamGoal: fenced ≥ 0.9 × unfenced events/s (issue 18).
const streamGoal = 0.9

const streamSystem = "jetstream+postgres"

type streamSize struct {
	workers, partitions int
	backlog             int64         // events per partition, published at once
	paced               int64         // events per partition, one round per pace
	pace                time.Duration // between rounds of the paced load
}

func streamSizeFor(env *benchEnv) streamSize {
	if env.small {
		return streamSize{workers: 3, partitions: 8, backlog: 50, paced: 10, pace: 50 * time.Millisecond}
	}
	return streamSize{workers: 12, partitions: 128, backlog: 500, paced: 40, pace: 200 * time.Millisecond}
}

// streamRun is one variant's trial.
type streamRun struct {
	eventsPerSec   float64
	eventsPerBatch float64   // over the backlog
	latencies      []float64 // seconds, one per event of the paced load
}

func streamE2E(ctx context.Context, env *benchEnv) ([]result, error) {
	size := streamSizeFor(env)
	dsn := postgresDSN
	if dsn == "" {
		pg, err := pgserver.Launch()
		if err != nil {
			return nil, fmt.Errorf("no --postgres given, and starting a throwaway PostgreSQL failed: %w", err)
		}
		defer pg.Close()
		dsn = pg.DSN("postgres")
	}
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
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	runs := map[bool][]streamRun{} // by unfenced
	var ratios, cost []float64
	for trial := range env.trials {
		var rates [2]float64
		for i := range 2 {
			unfenced := (trial+i)%2 == 1 // alternate which variant runs first
			r, err := runStream(ctx, js, pool, dsn, size, unfenced)
			if err != nil {
				return nil, fmt.Errorf("trial %d, unfenced=%v: %w", trial+1, unfenced, err)
			}
			runs[unfenced] = append(runs[unfenced], r)
			rates[map[bool]int{false: 0, true: 1}[unfenced]] = r.eventsPerSec
			env.logf("shardbench: stream-e2e trial %d, %s: %.0f events/s (%.1f events a transaction), latency p50 %.1f ms p99 %.1f ms",
				trial+1, map[bool]string{false: "fenced", true: "unfenced"}[unfenced], r.eventsPerSec, r.eventsPerBatch,
				1000*percentile(r.latencies, 50), 1000*percentile(r.latencies, 99))
		}
		ratios = append(ratios, rates[0]/rates[1])
		cost = append(cost, 100*(1-rates[0]/rates[1]))
	}
	where := fmt.Sprintf("%d workers × %d partitions", size.workers, size.partitions)
	each := func(unfenced bool, f func(streamRun) float64) []float64 {
		var out []float64
		for _, r := range runs[unfenced] {
			out = append(out, f(r))
		}
		return out
	}
	rate := func(unfenced bool) []float64 {
		return each(unfenced, func(r streamRun) float64 { return r.eventsPerSec })
	}
	perBatch := func(unfenced bool) []float64 {
		return each(unfenced, func(r streamRun) float64 { return r.eventsPerBatch })
	}
	ratio := measured("stream-e2e", streamSystem, "fenced ÷ unfenced events/s, JetStream → handler → PostgreSQL, "+where, "ratio", ratios).
		with("fenced_events_per_s_p50", percentile(rate(false), 50)).
		with("unfenced_events_per_s_p50", percentile(rate(true), 50)).
		with("fence_cost_percent_p50", percentile(cost, 50)).
		with("fenced_events_per_batch_p50", percentile(perBatch(false), 50)).
		with("unfenced_events_per_batch_p50", percentile(perBatch(true), 50)).
		withNote(fmt.Sprintf("a backlog of %d events per partition, published while the handlers are held; events ÷ (last effect committed − release)", size.backlog))
	ratio = ratio.withGoal(fmt.Sprintf("p50 >= %.1f", streamGoal), ratio.P50 >= streamGoal)
	rows := []result{ratio}
	for _, unfenced := range []bool{false, true} {
		name := map[bool]string{false: "fenced (FencedTx)", true: "unfenced (a plain transaction)"}[unfenced]
		rows = append(rows, measured("stream-e2e", streamSystem, "events/s, "+name+", "+where, "events/s", rate(unfenced)))
		var lat []float64
		for _, r := range runs[unfenced] {
			lat = append(lat, r.latencies...)
		}
		row := measured("stream-e2e", streamSystem, "publish → committed effect, "+name+", "+where, "s", lat).
			withNote(fmt.Sprintf("every event of a steady load, one event per partition every %v; p50/p99/max over the events of all trials", size.pace))
		row.Trials = len(runs[unfenced])
		rows = append(rows, row)
	}
	return rows, nil
}

// runStream runs one variant once on a fresh stream and schema.
func runStream(ctx context.Context, js jetstream.JetStream, pool *pgxpool.Pool, dsn string, size streamSize, unfenced bool) (streamRun, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := pipeline.CreateStream(ctx, js); err != nil {
		return streamRun{}, err
	}
	tables := pipeline.Tables{Schema: "shardbench_stream_" + randomHex(4)}
	if err := tables.Create(ctx, pool); err != nil {
		return streamRun{}, err
	}
	defer tables.Drop(context.WithoutCancel(ctx), pool) //nolint:errcheck // best effort

	fleetCfg := shard.Config{Shards: size.partitions}
	ids := fleetCfg.IDs()
	part := make(map[shard.ID]int, len(ids))
	for i, id := range ids {
		part[id] = i
	}
	var stats pipeline.Stats
	var mu sync.Mutex
	var latencies []float64
	committed := func(evs []pipeline.Event, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			if e.N > size.backlog { // the paced load's
				latencies = append(latencies, at.Sub(time.Unix(0, e.PublishedNs)).Seconds())
			}
		}
	}
	coord := memory.New()
	held := make(chan struct{}) // closed: the handlers may apply
	hold := func(*worker.Claim) pipeline.Resumed { <-held; return pipeline.Ran }
	var running sync.WaitGroup
	var stores []*postgres.Store
	defer func() {
		cancel()
		select {
		case <-held:
		default:
			close(held)
		}
		running.Wait()
		for _, st := range stores {
			_ = st.Close()
		}
	}()
	for i := range size.workers {
		st, err := postgres.Open(ctx, postgres.Config{DSN: withParam(dsn, "pool_max_conns", "16"), Table: tables.Offsets()})
		if err != nil {
			return streamRun{}, err
		}
		stores = append(stores, st)
		w, err := worker.New(worker.Config{
			ID: fmt.Sprintf("w%02d", i+1), Fleet: fleetCfg, Coordinator: coord, Offsets: st, Policy: shard.FastPolicy,
			Handler: &pipeline.Handler{JS: js, Store: st, Pool: st.Pool(), Tables: tables, Partition: part,
				Unfenced: unfenced, Stats: &stats, Committed: committed, Hooks: pipeline.Hooks{Before: hold}},
		})
		if err != nil {
			return streamRun{}, err
		}
		running.Go(func() { _ = w.Run(ctx) })
	}
	if err := waitAllOwned(ctx, coord, len(ids), size.workers); err != nil {
		return streamRun{}, err
	}

	if err := pipeline.Produce(ctx, js, size.partitions, size.backlog, 0, nil); err != nil {
		return streamRun{}, err
	}
	backlog := int64(size.partitions) * size.backlog
	began := time.Now()
	close(held)
	if err := waitEvents(ctx, &stats, backlog); err != nil {
		return streamRun{}, fmt.Errorf("draining the backlog: %w", err)
	}
	r := streamRun{eventsPerSec: float64(backlog) / time.Since(began).Seconds(), eventsPerBatch: float64(backlog) / float64(stats.Batches.Load())}
	if err := pipeline.ProduceFrom(ctx, js, size.partitions, size.backlog+1, size.backlog+size.paced, size.pace, nil); err != nil {
		return streamRun{}, err
	}
	if err := waitEvents(ctx, &stats, int64(size.partitions)*(size.backlog+size.paced)); err != nil {
		return streamRun{}, fmt.Errorf("the paced load: %w", err)
	}
	if n := stats.Stale.Load() + stats.Failed.Load(); n != 0 {
		return streamRun{}, fmt.Errorf("%d transactions refused by the fence and %d failed in a run without faults (first failure: %v)",
			stats.Stale.Load(), stats.Failed.Load(), stats.FirstFailure())
	}
	mu.Lock()
	r.latencies = latencies
	mu.Unlock()
	return r, nil
}

// waitAllOwned waits until every shard is owned, every worker owns some,
// max − min ≤ 1, and no shard has changed hands for a second: a hand-off
// while the handlers are held would wait out the drain timeout and fail
// the run.
func waitAllOwned(ctx context.Context, coord *memory.Coordinator, shards, workers int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last map[shard.ID]string
	var since time.Time
	for {
		snap, err := coord.Watch(ctx, 0)
		if err != nil {
			return err
		}
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
		case !maps.Equal(owners, last):
			last, since = owners, time.Now()
		case time.Since(since) >= time.Second:
			return nil
		}
		if !pipeline.Sleep(ctx, 20*time.Millisecond) {
			return errors.New("the fleet did not settle (every shard owned, max − min ≤ 1, nothing moving for 1 s) within a minute")
		}
	}
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
