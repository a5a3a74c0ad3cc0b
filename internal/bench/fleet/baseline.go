package fleet

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/apilock"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/reqcount"
	"github.com/shardlease/shardlease/shard"
)

// The baselines are internal/harness/apilock's workers: api.Lock with
// every option at its default (bench.SystemBaseline), and tuned to a
// shardlease policy (bench.SystemTuned: one session per worker bound to a
// TTL check with the policy's TTL and lock-delay, passed every renewal
// interval, and a spread of ⌈N/W⌉). This file runs them in this process;
// procs.go runs them as apilockd processes.

// baselineConfig is the apilock config of system's workers, without the
// worker's ID, connection and OnStart: for the tuned baseline, policy's
// TTL, renewal interval and lock-delay; for the default one, if quick, a
// 10 s session TTL and a 1 ms lock-delay so that a smoke run ends sooner
// (its figures are not results).
func baselineConfig(system, prefix string, shards int, policy shard.LeasePolicy, quick bool) apilock.Config {
	cfg := apilock.Config{Prefix: prefix, Shards: apilock.ShardNames(shards), Mode: apilock.Default, Quick: quick}
	if system == bench.SystemTuned {
		cfg.Mode, cfg.Quick = apilock.Tuned, false
		cfg.TTL, cfg.RenewEvery, cfg.LockDelay = policy.TTL, policy.RenewEvery, policy.EffectiveLockDelay()
	}
	return cfg
}

// Baseline is baseline workers in this process, each with its own Consul
// client.
type Baseline struct {
	env      *bench.Env
	sys      string
	cfg      apilock.Config // every worker's, but for ID, Consul and OnStart
	observer *api.Client
	// observerConns is the observer's transport, closed with the fleet.
	observerConns *http.Transport

	workers inprocWorkers
	started procfleet.StartLog
}

func (f *Baseline) Starts() *procfleet.StartLog { return &f.started }

// NewBaseline makes a fleet of system (bench.SystemBaseline, quick or not,
// or bench.SystemTuned to policy).
func NewBaseline(env *bench.Env, system, scenario string, shards int, policy shard.LeasePolicy, quick bool) (*Baseline, error) {
	cfg := env.APIConfig()
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("shardbench/%s-%s-%s", scenario, system, bench.RandomHex(4))
	return &Baseline{
		env: env, sys: system, cfg: baselineConfig(system, prefix, shards, policy, quick),
		observer: c, observerConns: cfg.Transport,
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

func (f *Baseline) System() string { return f.sys }

func (f *Baseline) Add(ctx context.Context, id string) error {
	sev := newSeverable(nil)
	cfg := f.cfg
	cfg.ID, cfg.Consul = id, apiConfigVia(f.env, sev)
	conns := cfg.Consul.Transport
	cfg.OnStart = func(s string) func() {
		f.started.Record(s)
		return nil
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	f.workers.start(ctx, id, sev, nil, func(ctx context.Context) {
		_ = apilock.Run(ctx, cfg, nil) // validated above
		conns.CloseIdleConnections()
	})
	return nil
}

// Crash cuts worker id's Consul connection and ends it: to Consul it is a
// kill -9'd process (a quick default baseline's sessions are destroyed
// too, invalidateHeld).
func (f *Baseline) Crash(id string) {
	if f.workers.crash(id) && f.cfg.Quick {
		invalidateHeld(f.observer, f.cfg.Prefix, id)
	}
}

// Stop starts a clean stop: the worker releases every lock it holds (a
// tuned one also its member key, session and check).
func (f *Baseline) Stop(id string) <-chan struct{} { return f.workers.stop(id) }

// invalidateHeld destroys, as an operator could, the sessions holding
// worker id's locks under prefix. Only the quick default baseline of a
// smoke run uses it: an abandoned session's 10 s TTL takes Consul 20 s to
// act on (it waits twice the TTL), too long for a smoke run; a destroyed
// session is invalidated at once, lock-delay and all, so the takeover path
// is the same.
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

func (f *Baseline) View(ctx context.Context, after uint64) (procfleet.View, error) {
	return baselineView(ctx, f.observer, f.cfg.Prefix, after, f.workers.ids())
}

// Requests are the request counters of the fleet's current workers.
func (f *Baseline) Requests() []*reqcount.Counter {
	out, _ := f.workers.counters()
	return out
}

// Acquires are the KV acquires (PUT ?acquire) the fleet's current workers
// sent so far that Consul granted, and those it refused.
func (f *Baseline) Acquires() (acquired, refused int64) {
	f.workers.each(func(t *requestTap) {
		acquired += t.acquired.Load()
		refused += t.refused.Load()
	})
	return acquired, refused
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

func (f *Baseline) Close() {
	f.workers.close()
	_, _ = f.observer.KV().DeleteTree(f.cfg.Prefix+"/", nil)
	f.observerConns.CloseIdleConnections()
}
