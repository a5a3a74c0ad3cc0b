package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/worker"
)

// slOptions shape a shardlease fleet.
type slOptions struct {
	shards   int
	policy   shard.LeasePolicy
	liveness consul.Liveness
	// coordinator, if set, wraps worker id's coordinator (stuck-worker
	// makes one that never acquires); nil runs every worker on its own.
	coordinator func(id string, c shard.Coordinator) shard.Coordinator
	// loadBalance is every worker's Config.LoadBalance (nil: count balance).
	loadBalance *rebalance.LoadPolicy
	// hold, if set, is what a handler does with its claim once started
	// (skewed-load reports its shard's load), until ctx ends; nil: it only
	// waits for the end.
	hold func(ctx context.Context, c *worker.Claim)
}

// fastFailover is the policy of the fast-failover liveness mode measured
// here, the one docs/tuning.md recommends (shard.FastPolicy): a session
// bound to a 1.5 s TTL health check, renewed every 300 ms, a 900 ms pause
// budget (2 × 0.3 + 0.9 ≤ 1.5), and an 800 ms lock-delay, which covers the
// step-down deadline 1.5 − 0.9 = 0.6 s so that a session ended before its
// TTL cannot free the locks while its cut-off worker still acts as owner.
var fastFailover = shard.FastPolicy

// slFleet is shardlease workers in this process, each with its own Consul
// client (and so its own connections) and session, as separate processes
// would have.
type slFleet struct {
	env      *bench.Env
	o        slOptions
	cfg      consul.Config
	store    *offmem.Store
	observer *procfleet.Observer

	mu      sync.Mutex
	workers map[string]*slWorker
	reaping sync.WaitGroup
	started procfleet.StartLog
}

func (f *slFleet) starts() *procfleet.StartLog { return &f.started }

type slWorker struct {
	sev    *severable
	coord  *consul.Coordinator
	cancel context.CancelFunc
	done   chan struct{}
}

func newSLFleet(env *bench.Env, scenario string, o slOptions) (*slFleet, error) {
	cfg := env.CoordConfig(fmt.Sprintf("shardbench/%s-sl-%s", scenario, bench.RandomHex(4)))
	if o.liveness != "" {
		cfg.Liveness = o.liveness
	}
	observer, err := procfleet.NewObserver(cfg)
	if err != nil {
		return nil, err
	}
	return &slFleet{env: env, o: o, cfg: cfg, store: offmem.New(), observer: observer, workers: map[string]*slWorker{}}, nil
}

func (f *slFleet) system() string { return bench.SystemShardlease }

func (f *slFleet) add(ctx context.Context, id string) error {
	sw := &slWorker{sev: newSeverable(nil), done: make(chan struct{})}
	cfg := f.cfg
	cfg.WrapTransport = sw.sev.wrap
	var err error
	if sw.coord, err = consul.New(cfg); err != nil {
		return err
	}
	var coord shard.Coordinator = sw.coord
	if f.o.coordinator != nil {
		coord = f.o.coordinator(id, coord)
	}
	w, err := worker.New(worker.Config{
		ID: id, Fleet: shard.Config{Shards: f.o.shards}, Coordinator: coord, Offsets: f.store,
		Policy: f.o.policy, LoadBalance: f.o.loadBalance,
		// The handler notes its start, holds its shard and does nothing
		// else: the figures are the coordination's own.
		Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			f.started.Record(string(c.Shard))
			if f.o.hold != nil {
				f.o.hold(ctx, c)
			}
			<-ctx.Done()
			return nil
		}),
	})
	if err != nil {
		sw.coord.Close()
		return err
	}
	// The worker outlives add's ctx: it ends with stop, crash or close.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sw.cancel = cancel
	f.mu.Lock()
	f.workers[id] = sw
	f.mu.Unlock()
	go func() {
		defer close(sw.done)
		if err := w.Run(wctx); err != nil && wctx.Err() == nil {
			f.env.Logf("shardbench: worker %s ended: %v", id, err)
		}
		sw.coord.Close()
	}()
	return nil
}

// take removes worker id from the fleet and returns it (nil if none).
func (f *slFleet) take(id string) *slWorker { return takeWorker(&f.mu, f.workers, id) }

func (f *slFleet) crash(id string) {
	if sw := f.take(id); sw != nil {
		sw.sev.sever()
		sw.cancel() // its Run now fails every call and returns
		f.reaping.Add(1)
		go func() { defer f.reaping.Done(); <-sw.done }()
	}
}

func (f *slFleet) stop(id string) <-chan struct{} {
	sw := f.take(id)
	if sw == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	sw.cancel() // drain, release every shard, destroy the session
	return sw.done
}

func (f *slFleet) view(ctx context.Context, after uint64) (procfleet.View, error) {
	return f.observer.View(ctx, after)
}

// assignor returns the worker holding P/assignor.
func (f *slFleet) assignor(ctx context.Context, must bool) (string, error) {
	return f.observer.AssignorWorker(ctx, must)
}

func (f *slFleet) close() {
	stopEvery(&f.mu, f.workers, f.stop)
	f.reaping.Wait()
	// Best effort: a given agent should not keep every run's keys.
	_ = f.observer.DeleteFleet(context.Background())
	f.observer.Close()
	f.store.Close()
}
