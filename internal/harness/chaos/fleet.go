package chaos

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/shardproc"
)

// Config describes a fleet of `shardd worker` processes for the nemesis.
type Config struct {
	// Shardd is the path of the shardd binary.
	Shardd string
	// Dir receives each worker's log (ID.log) and history (ID.jsonl).
	Dir string
	// Prefix is the fleet's Consul KV prefix; DSN the PostgreSQL database
	// of its offsets.
	Prefix, DSN string
	// Cluster is the Consul cluster. Worker i talks to client agent
	// Cluster.Clients[i mod len(Clients)], through its own Proxy, as an
	// application talks to its host's agent; the harness's own calls
	// (destroying a session) go to a server.
	Cluster *consultest.Cluster
	// Workers and Shards size the fleet.
	Workers, Shards int
	// Rate is the synthetic stream's records per second per shard.
	Rate int
	// Lease holds the lease flags, e.g. --ttl 2s --renew 400ms.
	Lease []string
}

// Fleet is a running fleet of workers, each behind its own Proxy.
type Fleet struct {
	cfg     Config
	Workers []*Worker
	// Agents are the client agents, each with the workers that talk to it.
	Agents []*Agent
}

// Agent is one client agent and the workers that talk to it.
type Agent struct {
	*consultest.Agent
	Workers []*Worker
}

// Worker is one worker ID, whose process may be killed and restarted.
type Worker struct {
	ID      string
	Agent   *Agent
	Proxy   *Proxy
	History string
	args    []string
	logPath string
	bin     string

	mu    sync.Mutex
	p     *shardproc.Proc
	lives []life
}

// life is one process of a worker: when it was started, and the process,
// which knows when it exited.
type life struct {
	started time.Time
	p       *shardproc.Proc
}

// Life is when one process of a worker ran: from just before it was
// started to when it was seen to exit (Exit zero: still running).
type Life struct {
	Start, Exit time.Time
}

// Start starts the fleet's proxies and workers. On error, what was started
// is stopped.
func Start(cfg Config) (*Fleet, error) {
	if cfg.Workers < 1 || cfg.Shards < 1 || cfg.Cluster == nil || len(cfg.Cluster.Clients) == 0 {
		clients := 0
		if cfg.Cluster != nil {
			clients = len(cfg.Cluster.Clients)
		}
		return nil, fmt.Errorf("chaos: config with %d workers, %d shards, %d client agents", cfg.Workers, cfg.Shards, clients)
	}
	f := &Fleet{cfg: cfg}
	for _, a := range cfg.Cluster.Clients {
		f.Agents = append(f.Agents, &Agent{Agent: a})
	}
	for i := range cfg.Workers {
		id := fmt.Sprintf("w%02d", i+1)
		a := f.Agents[i%len(f.Agents)]
		px, err := NewProxy(a.HTTPAddr)
		if err != nil {
			_ = f.Stop()
			return nil, err
		}
		w := &Worker{ID: id, Agent: a, Proxy: px,
			bin: cfg.Shardd, logPath: filepath.Join(cfg.Dir, id+".log"), History: filepath.Join(cfg.Dir, id+".jsonl")}
		w.args = append([]string{"worker", "--consul", px.Addr(), "--prefix", cfg.Prefix, "--id", id,
			"--shards", fmt.Sprint(cfg.Shards), "--rate", fmt.Sprint(cfg.Rate), "--offsets", cfg.DSN,
			"--history", w.History, "--log-level", "info"}, cfg.Lease...)
		f.Workers = append(f.Workers, w)
		a.Workers = append(a.Workers, w)
		if err := w.start(); err != nil {
			_ = f.Stop()
			return nil, err
		}
	}
	return f, nil
}

func (w *Worker) start() error {
	started := time.Now()
	p, err := shardproc.Start(w.bin, w.args, w.logPath)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.p = p
	w.lives = append(w.lives, life{started: started, p: p})
	w.mu.Unlock()
	return nil
}

func (w *Worker) proc() *shardproc.Proc {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p
}

func (w *Worker) signal(sig syscall.Signal) { w.proc().Signal(sig) }

// kill9 kills the worker's process and waits for it to die.
func (w *Worker) kill9() error {
	p := w.proc()
	p.Signal(syscall.SIGKILL)
	if !p.Wait(10 * time.Second) {
		return fmt.Errorf("chaos: %s did not die within 10 s of SIGKILL", w.ID)
	}
	return nil
}

// Lives lists, per worker ID, when each of its processes ran: what closes
// the handler runs of a process killed before it could record their end.
func (f *Fleet) Lives() map[string][]Life {
	out := map[string][]Life{}
	for _, w := range f.Workers {
		w.mu.Lock()
		for _, l := range w.lives {
			var exit time.Time
			if !l.p.Running() {
				exit, _ = l.p.Exit()
			}
			out[w.ID] = append(out[w.ID], Life{Start: l.started, Exit: exit})
		}
		w.mu.Unlock()
	}
	return out
}

// HistoryFiles are the workers' histories.
func (f *Fleet) HistoryFiles() []string {
	var out []string
	for _, w := range f.Workers {
		out = append(out, w.History)
	}
	return out
}

// Heal passes every proxy's traffic again and continues every worker and
// every client agent that is running.
func (f *Fleet) Heal() {
	for _, a := range f.Agents {
		if a.Running() {
			_ = a.Signal(syscall.SIGCONT)
		}
	}
	for _, w := range f.Workers {
		w.Proxy.Set(ModePass, 0)
		if p := w.proc(); p != nil {
			p.Signal(syscall.SIGCONT)
		}
	}
}

// Stop drains every worker (SIGTERM: final commits, shards released) and
// closes the proxies once the workers are gone.
func (f *Fleet) Stop() error {
	f.Heal()
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range f.Workers {
		if p := w.proc(); p != nil {
			wg.Go(func() {
				if err := p.Stop(20 * time.Second); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", w.ID, err))
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for _, w := range f.Workers {
		_ = w.Proxy.Close()
	}
	return errors.Join(errs...)
}
