package fleet

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
	"github.com/shardlease/shardlease/worker"
	"go.uber.org/zap"
)

// Options shape a shardlease fleet.
type Options struct {
	// Engine is the coordinator the workers run on: bench.EngineConsul
	// (also "") or bench.EngineEtcd, the run's etcd.
	Engine string
	Shards int
	Policy shard.LeasePolicy
	// Coordinator, if set, wraps worker id's coordinator (stuck-worker
	// makes one that never acquires); nil runs every worker on its own.
	Coordinator func(id string, c shard.Coordinator) shard.Coordinator
	// LoadBalance is every worker's Config.LoadBalance (nil: count balance).
	LoadBalance *shard.LoadBalance
	// Hold, if set, is what a handler does with its claim once started
	// (skewed-load reports its shard's load), until ctx ends; nil: it only
	// waits for the end.
	Hold func(ctx context.Context, c *worker.Claim)
	// Handler, if set, replaces the handler (Hold is then unused): reshard
	// records every run and closes its shards when asked. It must record
	// its starts itself if the scenario reads Starts.
	Handler worker.Handler
}

// Shardlease is shardlease workers in this process, each with its own
// Consul or etcd client (and so its own connections) and session, as
// separate processes would have.
type Shardlease struct {
	env      *bench.Env
	o        Options
	cfg      consul.Config // on Consul; its Prefix is the fleet's on either
	etcd     []string      // the endpoints, on etcd
	store    *offmem.Store
	observer *procfleet.Observer

	workers inprocWorkers
	started procfleet.StartLog
}

func (f *Shardlease) Starts() *procfleet.StartLog { return &f.started }

// NewShardlease prepares a fleet of shardlease workers on a fresh prefix
// and its observer; Add starts its workers.
func NewShardlease(env *bench.Env, scenario string, o Options) (*Shardlease, error) {
	cfg := env.CoordConfig(fmt.Sprintf("shardbench/%s-sl-%s", scenario, bench.RandomHex(4)))
	f := &Shardlease{env: env, o: o, cfg: cfg, store: offmem.New()}
	switch o.Engine {
	case "", bench.EngineConsul:
	case bench.EngineEtcd:
		var err error
		if f.etcd, err = env.Etcd.Endpoints(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("engine %q: want %s or %s", o.Engine, bench.EngineConsul, bench.EngineEtcd)
	}
	var err error
	if f.observer, err = newObserver(env, f.etcd, cfg.Prefix); err != nil {
		return nil, err
	}
	return f, nil
}

// newObserver is an observer of the fleet at prefix: on the run's Consul,
// or on etcd at endpoints when given.
func newObserver(env *bench.Env, endpoints []string, prefix string) (*procfleet.Observer, error) {
	if endpoints == nil {
		return procfleet.NewObserver(env.CoordConfig(prefix))
	}
	c, err := procfleet.DialEtcd(etcd.Connection{Endpoints: endpoints}, etcd.Config{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	return procfleet.NewObserverOn(c, prefix), nil
}

// coordinator makes a worker's coordinator, with its own client: on
// Consul through sev, on etcd through link.
func (f *Shardlease) coordinator() (c procfleet.Observed, sev *severable, link *etcdLink, err error) {
	if f.etcd != nil {
		link = &etcdLink{}
		link.coord, err = procfleet.DialEtcd(etcd.Connection{Endpoints: f.etcd, Requests: &link.requests}, etcd.Config{Prefix: f.cfg.Prefix})
		return link.coord, nil, link, err
	}
	sev = newSeverable(nil)
	cfg := f.cfg
	cfg.WrapTransport = sev.wrap
	cc, err := consul.New(cfg)
	return cc, sev, nil, err
}

func (f *Shardlease) System() string { return bench.SystemShardlease }

func (f *Shardlease) Add(ctx context.Context, id string) error {
	cc, sev, link, err := f.coordinator()
	if err != nil {
		return err
	}
	var coord shard.Coordinator = cc
	if f.o.Coordinator != nil {
		coord = f.o.Coordinator(id, coord)
	}
	// The handler notes its start, holds its shard and does nothing
	// else: the figures are the coordination's own.
	var h worker.Handler = worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		f.started.Record(string(c.Shard))
		if f.o.Hold != nil {
			f.o.Hold(ctx, c)
		}
		<-ctx.Done()
		return nil
	})
	if f.o.Handler != nil {
		h = f.o.Handler
	}
	w, err := worker.New(worker.Config{
		ID: id, Fleet: shard.Config{Shards: f.o.Shards}, Coordinator: coord, Offsets: f.store, LocalOffsets: true, Logger: zap.NewNop(), // one process; the figures say what happened
		Policy: f.o.Policy, LoadBalance: f.o.LoadBalance, Handler: h,
	})
	if err != nil {
		cc.Close()
		return err
	}
	f.workers.start(ctx, id, sev, link, func(ctx context.Context) {
		if err := w.Run(ctx); err != nil && ctx.Err() == nil {
			f.env.Logf("shardbench: worker %s ended: %v", id, err)
		}
		cc.Close()
	})
	return nil
}

// Crash cuts worker id's connection and ends it: to its coordinator it is
// a kill -9'd process.
func (f *Shardlease) Crash(id string) { f.workers.crash(id) }

// Stop ends worker id cleanly: it drains, releases every shard and
// destroys its session.
func (f *Shardlease) Stop(id string) <-chan struct{} { return f.workers.stop(id) }

func (f *Shardlease) View(ctx context.Context, after uint64) (procfleet.View, error) {
	return f.observer.View(ctx, after)
}

// Assignor returns the worker holding P/assignor.
func (f *Shardlease) Assignor(ctx context.Context, must bool) (string, error) {
	return f.observer.AssignorWorker(ctx, must)
}

// Observer is the fleet's observer, for a scenario that reads whole
// snapshots (stuck-worker, skewed-load).
func (f *Shardlease) Observer() *procfleet.Observer { return f.observer }

func (f *Shardlease) Close() {
	f.workers.close()
	// Best effort: a given agent should not keep every run's keys.
	_ = f.observer.DeleteFleet(context.Background())
	f.observer.Close()
	f.store.Close()
}
