package chaos

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/internal/shardproc"
)

// Config describes a fleet of `shardd worker` processes for the nemesis.
type Config struct {
	// Shardd is the path of the shardd binary.
	Shardd string
	// Dir receives each worker's log (ID.log) and offset history
	// (ID.jsonl).
	Dir string
	// Prefix is the fleet's Consul KV prefix; DSN the PostgreSQL database
	// of its offsets.
	Prefix, DSN string
	// Servers are the Consul agents' HTTP addresses, named by ServerNames:
	// worker i talks to server i mod len(Servers), through its own Proxy.
	Servers, ServerNames []string
	// Workers and Shards size the fleet.
	Workers, Shards int
	// Rate is the synthetic stream's records per second per shard.
	Rate int
	// Lease holds the lease flags, e.g. --ttl 4s --renew 500ms.
	Lease []string
}

// Fleet is a running fleet of workers, each behind its own Proxy.
type Fleet struct {
	cfg     Config
	Workers []*Worker
}

// Worker is one worker ID, whose process may be killed and restarted.
type Worker struct {
	ID, Server string
	Proxy      *Proxy
	args       []string
	logPath    string
	History    string
	bin        string

	mu sync.Mutex
	p  *shardproc.Proc
}

// Start starts the fleet's proxies and workers. On error, what was started
// is stopped.
func Start(cfg Config) (*Fleet, error) {
	if cfg.Workers < 1 || cfg.Shards < 1 || len(cfg.Servers) == 0 || len(cfg.Servers) != len(cfg.ServerNames) {
		return nil, fmt.Errorf("chaos: config with %d workers, %d shards, %d servers, %d server names",
			cfg.Workers, cfg.Shards, len(cfg.Servers), len(cfg.ServerNames))
	}
	f := &Fleet{cfg: cfg}
	for i := range cfg.Workers {
		id := fmt.Sprintf("w%02d", i+1)
		px, err := NewProxy(cfg.Servers[i%len(cfg.Servers)])
		if err != nil {
			_ = f.Stop()
			return nil, err
		}
		w := &Worker{ID: id, Server: cfg.ServerNames[i%len(cfg.Servers)], Proxy: px,
			bin: cfg.Shardd, logPath: filepath.Join(cfg.Dir, id+".log"), History: filepath.Join(cfg.Dir, id+".jsonl")}
		w.args = append([]string{"worker", "--consul", px.Addr(), "--prefix", cfg.Prefix, "--id", id,
			"--shards", fmt.Sprint(cfg.Shards), "--rate", fmt.Sprint(cfg.Rate), "--offsets", cfg.DSN,
			"--history", w.History, "--log-level", "info"}, cfg.Lease...)
		f.Workers = append(f.Workers, w)
		if err := w.start(); err != nil {
			_ = f.Stop()
			return nil, err
		}
	}
	return f, nil
}

func (w *Worker) start() error {
	p, err := shardproc.Start(w.bin, w.args, w.logPath)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.p = p
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

// Servers maps each worker ID to the name of the Consul server it talks to.
func (f *Fleet) Servers() map[string]string {
	out := map[string]string{}
	for _, w := range f.Workers {
		out[w.ID] = w.Server
	}
	return out
}

// HistoryFiles are the workers' offset histories.
func (f *Fleet) HistoryFiles() []string {
	var out []string
	for _, w := range f.Workers {
		out = append(out, w.History)
	}
	return out
}

// Heal passes every proxy's traffic again and continues every worker.
func (f *Fleet) Heal() {
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
