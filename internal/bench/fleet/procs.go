package fleet

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/harness/shardproc"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
)

// Procs is one system's workers as OS processes on this machine, as
// `make chaos` runs them (internal/harness/procfleet): `shardd worker` for
// shardlease, apilockd (internal/harness/apilock) for the baselines, each
// built once per fleet. A crash is SIGKILL; a stop is SIGTERM, done when
// the process has exited. Each worker writes its history
// (internal/offsetlog) to a file, and the fleet follows the files for
// their "start" lines: when a shard's new handler started, by the worker's
// wall clock (shardd: after its claim was fenced; apilockd: after its lock
// was acquired, with no fence).
type Procs struct {
	env    *bench.Env
	sys    string
	dir    string // binaries, logs and histories; removed with the fleet
	procs  *procfleet.Fleet
	prefix string
	// The observer: shardlease's, or a client of the baseline's keys.
	slObs   *procfleet.Observer
	blObs   *api.Client
	blConns *http.Transport

	mu      sync.Mutex
	live    map[string]*procfleet.Worker // the workers not crashed or stopped
	quick   bool                         // a quick default baseline (Shape.Quick)
	reaping sync.WaitGroup
}

// NewProcs builds the worker binary of system into a fresh directory and
// prepares a fleet on a fresh prefix: shardlease on policy, the tuned
// baseline tuned to it, or the default baseline (quick or not). extra are
// every worker's further arguments.
func NewProcs(env *bench.Env, system, scenario string, shards int, policy shard.LeasePolicy, quick bool, extra ...string) (*Procs, error) {
	return newProcs(env, bench.EngineConsul, system, scenario, shards, policy, quick, extra...)
}

// newProcs is NewProcs on engine: etcd runs shardlease's workers only (the
// baselines are api.Lock, Consul's).
func newProcs(env *bench.Env, engine, system, scenario string, shards int, policy shard.LeasePolicy, quick bool, extra ...string) (*Procs, error) {
	var endpoints []string
	if engine == bench.EngineEtcd {
		if system != bench.SystemShardlease {
			return nil, fmt.Errorf("%s runs on Consul only, not on etcd", system)
		}
		var err error
		if endpoints, err = env.Etcd.Endpoints(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "shardbench-procs-")
	if err != nil {
		return nil, err
	}
	f := &Procs{env: env, sys: system, dir: dir, live: map[string]*procfleet.Worker{},
		prefix: fmt.Sprintf("shardbench/%s-%s-p-%s", scenario, system, bench.RandomHex(4))}
	pkg := "github.com/shardlease/shardlease/internal/harness/apilock/apilockd"
	if system == bench.SystemShardlease {
		pkg = "github.com/shardlease/shardlease/cmd/shardd"
	}
	bin, err := shardproc.BuildPackage(dir, pkg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr := env.Consul.Address
	var args []string
	if system == bench.SystemShardlease {
		// No commits: the workers' histories hold their fences and handler
		// runs, and the figures are the coordination's own.
		coordinator := []string{"--consul", addr}
		if endpoints != nil {
			coordinator = []string{"--etcd", strings.Join(endpoints, ",")}
		}
		args = append([]string{"worker"}, coordinator...)
		args = append(args, "--prefix", f.prefix, "--shards", strconv.Itoa(shards),
			"--ttl", policy.TTL.String(), "--renew", policy.RenewEvery.String(), "--pause-budget", policy.PauseBudget.String(),
			"--lock-delay", policy.EffectiveLockDelay().String(), "--rate", "1", "--commit-every", "1h", "--log-level", "warn",
			"--offsets", "memory", "--allow-local-offsets") // the fences are not what is measured; keep them off the coordinator
		if f.slObs, err = newObserver(env, endpoints, f.prefix); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	} else {
		cfg := baselineConfig(system, f.prefix, shards, policy, quick)
		f.quick = cfg.Quick
		args = []string{"--consul", addr, "--prefix", f.prefix, "--shards", strconv.Itoa(shards), "--mode", string(cfg.Mode),
			"--ttl", cfg.TTL.String(), "--renew", cfg.RenewEvery.String(), "--lock-delay", cfg.LockDelay.String()}
		if cfg.Quick {
			args = append(args, "--quick")
		}
		conf := env.APIConfig()
		if f.blObs, err = api.NewClient(conf); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		f.blConns = conf.Transport
	}
	f.procs, err = procfleet.New(procfleet.Config{Bin: bin, Dir: dir, Args: append(args, extra...), FollowStarts: true})
	if err != nil {
		f.closeObserver()
		os.RemoveAll(dir)
		return nil, err
	}
	return f, nil
}

func (f *Procs) System() string              { return f.sys }
func (f *Procs) Starts() *procfleet.StartLog { return f.procs.Starts() }

// Prefix is the fleet's KV prefix, for a coordinator of its own (an
// operator's actions).
func (f *Procs) Prefix() string { return f.prefix }

// Add starts worker id: its first process, or another under the same ID
// (rolling-restart).
func (f *Procs) Add(ctx context.Context, id string) error { return f.AddWith(ctx, id) }

// AddWith is Add with args of the worker's own (e.g. --zone) after the
// fleet's; a worker started again keeps the args of its first process.
func (f *Procs) AddWith(_ context.Context, id string, args ...string) error {
	w := f.procs.Worker(id)
	var err error
	if w == nil {
		w, err = f.procs.Add(id, args...)
	} else {
		err = w.Start()
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.live[id] = w
	f.mu.Unlock()
	return nil
}

func (f *Procs) take(id string) *procfleet.Worker { return takeWorker(&f.mu, f.live, id) }

// Crash kills worker id's process with SIGKILL.
func (f *Procs) Crash(id string) {
	w := f.take(id)
	if w == nil {
		return
	}
	w.Signal(syscall.SIGKILL)
	if f.quick {
		invalidateHeld(f.blObs, f.prefix, id)
	}
	f.reaping.Add(1)
	go func() { defer f.reaping.Done(); <-w.Done() }()
}

// Stop sends worker id SIGTERM; the channel closes once it has exited (or
// was killed, 30 s on).
func (f *Procs) Stop(id string) <-chan struct{} {
	done := make(chan struct{})
	w := f.take(id)
	if w == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		if err := w.Stop(30 * time.Second); err != nil {
			f.env.Logf("shardbench: %s %s: %v", f.sys, id, err)
		}
	}()
	return done
}

func (f *Procs) View(ctx context.Context, after uint64) (procfleet.View, error) {
	if f.slObs != nil {
		return f.slObs.View(ctx, after)
	}
	return baselineView(ctx, f.blObs, f.prefix, after, members(&f.mu, f.live))
}

// Assignor returns the worker holding P/assignor (shardlease only).
func (f *Procs) Assignor(ctx context.Context, must bool) (string, error) {
	if f.slObs == nil {
		return noAssignor(f, must)
	}
	return f.slObs.AssignorWorker(ctx, must)
}

// HistoryFiles are every worker's history.
func (f *Procs) HistoryFiles() []string { return f.procs.HistoryFiles() }

// HandlerRuns reads the workers' histories until every one of the fleet's
// shards has a handler running (the caller saw each owned, so their
// handlers are starting or have started), and returns every handler run.
func (f *Procs) HandlerRuns(ctx context.Context, shards int) ([]offsetlog.Interval, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ivs, err := offsetlog.ReadAll(f.HistoryFiles()...)
		if err != nil {
			return nil, err
		}
		running := map[shard.ID]bool{}
		for _, iv := range ivs {
			if iv.End == math.MaxInt64 {
				running[iv.Shard] = true
			}
		}
		if len(running) >= shards {
			return ivs, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the fleet is ready, but only %d of %d shards have a handler running after 10 s", len(running), shards)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Processing reads the fleet's view and the workers' histories until
// every shard the view shows owned has a handler running on its owner:
// the shard's latest run started there, in the owner's current process,
// and has not ended. Unlike HandlerRuns, a run of a killed process, which
// never ends, counts neither for the shard's next owner nor for the same
// worker started again. The view is read again on each poll, so a shard
// that moves meanwhile is waited for on its new owner. It gives up after
// 10 s plus extra (a handler that restores state before it starts). It
// returns every handler run.
func (f *Procs) Processing(ctx context.Context, extra time.Duration) ([]offsetlog.Interval, error) {
	deadline := time.Now().Add(10*time.Second + extra)
	for {
		v, err := f.View(ctx, 0)
		if err != nil {
			return nil, err
		}
		_, ivs, err := offsetlog.ReadAll(f.HistoryFiles()...)
		if err != nil {
			return nil, err
		}
		latest := map[shard.ID]offsetlog.Interval{}
		for _, iv := range ivs {
			if l, ok := latest[iv.Shard]; !ok || iv.Start > l.Start {
				latest[iv.Shard] = iv
			}
		}
		var waiting []string
		for s, owner := range v.Owners {
			l := latest[shard.ID(s)]
			if l.Worker != owner || l.End != math.MaxInt64 || l.Start < f.lastStart(owner) {
				waiting = append(waiting, s)
			}
		}
		if len(waiting) == 0 {
			return ivs, nil
		}
		if time.Now().After(deadline) {
			slices.Sort(waiting)
			return nil, fmt.Errorf("%d shards owned but not processing on their owner after %v: %s", len(waiting), 10*time.Second+extra, strings.Join(waiting[:min(len(waiting), 5)], ", "))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lastStart is when worker id's latest process started (ns), 0 when it
// has none.
func (f *Procs) lastStart(id string) int64 {
	w := f.procs.Worker(id)
	if w == nil {
		return 0
	}
	lives := w.Lives()
	if len(lives) == 0 {
		return 0
	}
	return lives[len(lives)-1].Start.UnixNano()
}

func (f *Procs) Close() {
	stopEvery(&f.mu, f.live, f.Stop)
	f.reaping.Wait()
	f.closeObserver()
	os.RemoveAll(f.dir)
}

// closeObserver deletes the fleet's keys, best effort (a given agent should
// not keep every run's keys), and closes the observer.
func (f *Procs) closeObserver() {
	if f.slObs != nil {
		_ = f.slObs.DeleteFleet(context.Background())
		f.slObs.Close()
	} else {
		_, _ = f.blObs.KV().DeleteTree(f.prefix+"/", nil)
		f.blConns.CloseIdleConnections()
	}
}
