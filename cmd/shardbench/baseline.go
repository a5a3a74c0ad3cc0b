package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/apilock"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// The baselines are internal/harness/apilock's workers: api.Lock with
// every option at its default (systemBaseline), and tuned to a shardlease
// policy (systemTuned: one session per worker bound to a TTL check with
// the policy's TTL and lock-delay, passed every renewal interval, and a
// spread of ⌈N/W⌉). This file runs them in this process; procfleet.go
// runs them as apilockd processes.

// baselineConfig is the apilock config of system's workers, without the
// worker's ID, connection and OnStart: for the tuned baseline, policy's
// TTL, renewal interval and lock-delay; for the default one, with --small,
// a 10 s session TTL and a 1 ms lock-delay so that a smoke run ends sooner
// (its figures are not results).
func baselineConfig(env *bench.Env, system, prefix string, shards int, policy shard.LeasePolicy) apilock.Config {
	cfg := apilock.Config{Prefix: prefix, Shards: apilock.ShardNames(shards), Mode: apilock.Default, Quick: env.Small}
	if system == bench.SystemTuned {
		cfg.Mode, cfg.Quick = apilock.Tuned, false
		cfg.TTL, cfg.RenewEvery, cfg.LockDelay = policy.TTL, policy.RenewEvery, policy.EffectiveLockDelay()
	}
	return cfg
}

// blFleet is baseline workers in this process, each with its own Consul
// client.
type blFleet struct {
	env      *bench.Env
	sys      string
	cfg      apilock.Config // every worker's, but for ID, Consul and OnStart
	observer *api.Client
	// observerConns is the observer's transport, closed with the fleet.
	observerConns *http.Transport

	mu      sync.Mutex
	workers map[string]*blWorker
	reaping sync.WaitGroup
	started procfleet.StartLog
}

func (f *blFleet) starts() *procfleet.StartLog { return &f.started }

type blWorker struct {
	sev    *severable
	conns  *http.Transport
	cancel context.CancelFunc
	done   chan struct{}
}

// newBaselineFleet makes a fleet of system (systemBaseline, or systemTuned
// to policy).
func newBaselineFleet(env *bench.Env, system, scenario string, shards int, policy shard.LeasePolicy) (*blFleet, error) {
	cfg := env.APIConfig()
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("shardbench/%s-%s-%s", scenario, system, bench.RandomHex(4))
	return &blFleet{
		env: env, sys: system, cfg: baselineConfig(env, system, prefix, shards, policy),
		observer: c, observerConns: cfg.Transport, workers: map[string]*blWorker{},
	}, nil
}

// apiConfigVia is a fresh client config for env's agent whose transport
// sev wraps.
func apiConfigVia(env *bench.Env, sev *severable) *api.Config {
	cfg := env.APIConfig()
	sev.base = cfg.Transport
	cfg.HttpClient = &http.Client{Transport: sev}
	return cfg
}

func (f *blFleet) system() string { return f.sys }

func (f *blFleet) add(ctx context.Context, id string) error {
	bw := &blWorker{sev: newSeverable(nil), done: make(chan struct{})}
	cfg := f.cfg
	cfg.ID, cfg.Consul = id, apiConfigVia(f.env, bw.sev)
	bw.conns = cfg.Consul.Transport
	cfg.OnStart = func(s string) func() {
		f.started.Record(s)
		return nil
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// The worker outlives add's ctx: it ends with stop, crash or close.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	bw.cancel = cancel
	f.mu.Lock()
	f.workers[id] = bw
	f.mu.Unlock()
	go func() {
		defer close(bw.done)
		_ = apilock.Run(wctx, cfg, nil) // validated above
		bw.conns.CloseIdleConnections()
	}()
	return nil
}

// take removes worker id from the fleet and returns it (nil if none).
func (f *blFleet) take(id string) *blWorker { return takeWorker(&f.mu, f.workers, id) }

func (f *blFleet) crash(id string) {
	bw := f.take(id)
	if bw == nil {
		return
	}
	bw.sev.sever()
	bw.cancel() // its Run now fails every call and returns
	if f.env.Small && f.sys == bench.SystemBaseline {
		invalidateHeld(f.observer, f.cfg.Prefix, id)
	}
	f.reaping.Add(1)
	go func() { defer f.reaping.Done(); <-bw.done }()
}

// stop starts a clean stop: the worker releases every lock it holds (a
// tuned one also its member key, session and check).
func (f *blFleet) stop(id string) <-chan struct{} {
	bw := f.take(id)
	if bw == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	bw.cancel()
	return bw.done
}

// invalidateHeld destroys, as an operator could, the sessions holding
// worker id's locks under prefix. Only --small uses it, for the default
// baseline: an abandoned session's 10 s TTL takes Consul 20 s to act on (it
// waits twice the TTL), too long for a smoke run; a destroyed session is
// invalidated at once, lock-delay and all, so the takeover path is the
// same.
func invalidateHeld(c *api.Client, prefix, id string) {
	pairs, _, err := c.KV().List(apilock.ShardsPrefix(prefix), nil)
	if err != nil {
		return // the scenario then waits for the TTL, as in a full run
	}
	for _, p := range pairs {
		if p.Session != "" && string(p.Value) == id {
			_, _ = c.Session().Destroy(p.Session, nil)
		}
	}
}

func (f *blFleet) view(ctx context.Context, after uint64) (procfleet.View, error) {
	f.mu.Lock()
	members := make([]string, 0, len(f.workers))
	for id := range f.workers {
		members = append(members, id)
	}
	f.mu.Unlock()
	return baselineView(ctx, f.observer, f.cfg.Prefix, after, members)
}

// baselineView lists a baseline fleet's locks under prefix (a blocking
// query past after): the owner of a held lock is its value. members are
// the workers the harness runs: the baselines keep no member list of their
// own (a tuned worker's member key says only that its session lives).
func baselineView(ctx context.Context, c *api.Client, prefix string, after uint64, members []string) (procfleet.View, error) {
	q := (&api.QueryOptions{WaitIndex: after, WaitTime: time.Minute}).WithContext(ctx)
	pairs, meta, err := c.KV().List(apilock.ShardsPrefix(prefix), q)
	if err != nil {
		return procfleet.View{}, err
	}
	v := procfleet.View{Index: meta.LastIndex, Owners: map[string]string{}, Members: members}
	for _, p := range pairs {
		if p.Session != "" {
			v.Owners[p.Key[len(apilock.ShardsPrefix(prefix)):]] = string(p.Value)
		}
	}
	return v, nil
}

func (f *blFleet) close() {
	stopEvery(&f.mu, f.workers, f.stop)
	f.reaping.Wait()
	_, _ = f.observer.KV().DeleteTree(f.cfg.Prefix+"/", nil)
	f.observerConns.CloseIdleConnections()
}
