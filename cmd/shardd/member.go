package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/cli"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// member is one member of a fleet as a checked command line describes it:
// what `shardd worker` and `shardd run` start, the one way, through
// runMember. They differ only in the fields below the flags.
type member struct {
	name  string      // the command, for messages: "shardd worker"
	flags memberFlags // flags.engine: the coordinator it runs on
	// localOffsets: the store is process-local on purpose
	// (worker.Config.LocalOffsets).
	localOffsets bool
	address      string // shown to operators; default the bound --http address
	// newLog builds the command's logger (JSON, console) at --log-level.
	newLog func(level string, w io.Writer) (*zap.Logger, error)
	// openStore opens the offset store the worker fences claims in.
	openStore func(ctx context.Context, log *zap.Logger) (offsets.Store, func(), error)
	// newHandler builds the handler once the store and the logger exist.
	// A handler that can kill everything it started (killer) makes the
	// path take SIGINT, SIGTERM and SIGHUP itself: the first drains, a
	// second kills.
	newHandler func(store offsets.Store, log *zap.Logger) (worker.Handler, error)
	// logFields are the command's own, on the "starting" line.
	logFields []zap.Field
}

// killer is a handler that runs processes of its own (exec.Supervisor).
type killer interface{ KillAll() int }

// runMember starts the member, runs it until ctx ends (or a signal, for a
// killer handler) and drains; it returns the exit code. Every start-up
// step is here, in this order: logger, coordinator, offset store, --http
// listener, handler, worker, metrics server, signals, run, drain.
func runMember(ctx context.Context, m member, stderr io.Writer) int {
	f := m.flags
	log, err := m.newLog(f.level, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", m.name, err)
		return exitBadInvoke
	}
	defer log.Sync()

	var coord shard.Coordinator
	var requests consul.RequestCounter
	var etcdRequested etcd.RequestCounter
	collector := consulRequests(&requests, f.id)
	where := []zap.Field{zap.String("coordinator", "embedded (this process is the whole fleet)")}
	switch f.engine {
	case onConsul:
		ccfg := f.consul
		ccfg.WrapTransport = requests.Wrap
		c, err := consul.New(ccfg)
		if err != nil {
			log.Error("bad Consul settings", zap.Error(err))
			return exitBadInvoke
		}
		defer c.Close()
		coord = c
		where = []zap.Field{zap.String("consul", ccfg.Address), zap.String("liveness", string(ccfg.Liveness))}
	case onEtcd:
		collector = etcdRequests(&etcdRequested, f.id)
		c, closeEtcd, err := openEtcd(ctx, f, &etcdRequested, log)
		switch {
		case err != nil && ctx.Err() != nil:
			log.Info("stopped before joining the fleet", zap.Error(err))
			return exitOK
		case err != nil:
			log.Error("bad etcd settings", zap.Error(err))
			return exitBadInvoke
		}
		defer closeEtcd()
		coord = c
		where = []zap.Field{zap.Strings("etcd", f.etcd.Endpoints)}
	default:
		coord = memory.New()
	}

	store, closeStore, err := m.openStore(ctx, log)
	if err != nil {
		log.Error("cannot open the offset store", zap.Error(err))
		return exitFailed
	}
	defer closeStore()

	// Bind --http first: a bad address fails before joining the fleet, and
	// the bound address (port 0 picks one) is what operators are shown.
	address := m.address
	var ln net.Listener
	if f.httpAddr != "" {
		if ln, err = net.Listen("tcp", f.httpAddr); err != nil {
			log.Error("cannot serve --http", zap.String("addr", f.httpAddr), zap.Error(err))
			return exitFailed
		}
		defer ln.Close()
		if address == "" {
			address = ln.Addr().String()
		}
	}

	wlog := log.With(zap.String("worker", f.id))
	h, err := m.newHandler(store, wlog)
	if err != nil {
		log.Error("invalid handler config", zap.Error(err))
		return exitBadInvoke
	}
	reg := prometheus.NewRegistry()
	wcfg := f.settings()
	wcfg.Address, wcfg.Version = address, cli.Version()
	wcfg.Coordinator, wcfg.Offsets, wcfg.Handler, wcfg.LocalOffsets = coord, store, h, m.localOffsets
	wcfg.Registerer, wcfg.Logger = reg, log
	w, err := worker.New(wcfg)
	if err != nil {
		log.Error("invalid worker config", zap.Error(err))
		return exitBadInvoke
	}
	if ln != nil {
		stop, err := serveWorkerHTTP(ln, reg, w, collector, wlog)
		if err != nil {
			log.Error("cannot serve --http", zap.String("addr", f.httpAddr), zap.Error(err))
			return exitFailed
		}
		defer stop()
	}
	// A second signal cuts the stop short: it kills `shardd run`'s
	// children at once, and ends a drain before the stop.
	var second []func()
	k, kills := h.(killer)
	if kills {
		second = append(second, func() {
			killed := k.KillAll()
			wlog.Warn("second signal: every child killed at once (SIGKILL)", zap.Int("children", killed))
		})
	}
	if f.stopDrain > 0 {
		second = append(second, func() {
			wlog.Warn("second signal: the drain before the stop cut short; releasing every shard now")
			w.StopNow()
		})
	}
	if len(second) > 0 {
		var stop func()
		ctx, stop = takeSignals(ctx, wlog, second...)
		defer stop()
	}

	drain := f.drain
	if drain == 0 {
		drain = worker.DefaultDrainTimeout // what the worker runs with
	}
	wlog.Info("starting", append(append(where,
		zap.String("prefix", f.consul.Prefix), zap.Int("shards", f.fleet.Shards), zap.String("shard_name", f.fleet.Name),
		zap.Duration("ttl", f.policy.TTL), zap.Duration("renew", f.policy.RenewEvery), zap.Duration("pause_budget", f.policy.PauseBudget),
		zap.Duration("lock_delay", f.policy.EffectiveLockDelay()), zap.Duration("drain_timeout", drain), zap.Duration("rejoin_grace", f.rejoin),
		zap.Duration("drain_before_stop", f.stopDrain)), m.logFields...)...)
	err = w.Run(ctx)
	if kills {
		if n := k.KillAll(); n > 0 { // a backstop: none should be left
			wlog.Warn("children still running after the drain: killed", zap.Int("children", n))
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped while still waiting for the coordinator: nothing was
		// joined, so nothing is left to release.
		wlog.Info("stopped before joining the fleet", zap.Error(err))
		return exitOK
	case err != nil:
		wlog.Error("cannot run", zap.Error(err))
		return exitFailed
	}
	switch f.engine {
	case onConsul:
		wlog.Info("stopped", zap.Int64("consul_requests", requests.Total()))
	case onEtcd:
		wlog.Info("stopped", zap.Int64("etcd_requests", etcdRequested.Total()))
	default:
		wlog.Info("stopped")
	}
	return exitOK
}

// takeSignals returns ctx ended by the first SIGINT, SIGTERM or SIGHUP (the
// terminal went away), and answers a second one with each of second (kill
// `shardd run`'s children, end a drain before the stop). Listening also
// keeps a second signal (or a hangup) from killing shardd before it has
// stopped its children, which would leave their own children behind.
// stop ends the listening.
func takeSignals(ctx context.Context, log *zap.Logger, second ...func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for n := 0; ; {
			select {
			case sig := <-sigs:
				if n++; n == 1 {
					log.Info("stopping; a second signal stops at once", zap.Stringer("signal", sig))
					cancel()
				} else {
					for _, f := range second {
						f()
					}
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// openEtcd dials the member's etcd, counting its requests in requests,
// and opens the coordinator on it; the client logs its own errors only. A client with a user authenticates
// when dialled: an etcd that cannot be reached then is waited for, as the
// worker waits for a coordinator it cannot reach, until ctx ends. close
// closes both.
func openEtcd(ctx context.Context, f memberFlags, requests *etcd.RequestCounter, log *zap.Logger) (*etcd.Coordinator, func(), error) {
	conn := f.etcd
	conn.Requests = requests
	var cli *clientv3.Client
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		var err error
		cli, err = conn.Dial(log.Named("etcd").WithOptions(zap.IncreaseLevel(zap.ErrorLevel)))
		if err == nil {
			break
		}
		if !errors.Is(err, shard.ErrUnavailable) {
			return nil, nil, err
		}
		log.Warn("etcd not reachable; retrying", zap.Error(err), zap.Duration("in", wait))
		select {
		case <-ctx.Done():
			return nil, nil, err
		case <-time.After(wait):
		}
	}
	c, err := etcd.New(etcd.Config{Client: cli, Prefix: f.consul.Prefix})
	if err != nil {
		_ = cli.Close()
		return nil, nil, err
	}
	return c, func() { c.Close(); _ = cli.Close() }, nil
}
