package chaos

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
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
	// Etcd, instead of Cluster, runs the fleet on etcd (shardd worker
	// --etcd): worker i talks to member Etcd.Members[i mod n] through its
	// own TCPProxy, and its zone is that member's name.
	Etcd *etcdtest.Cluster
	// Workers and Shards size the fleet.
	Workers, Shards int
	// Rate is the synthetic stream's records per second per shard.
	Rate int
	// Lease holds the lease flags, e.g. --ttl 2s --renew 400ms.
	Lease []string
	// Restore, when set, gives the stream state that takes this long to
	// rebuild and the workers a standby side (shardd worker --restore):
	// planned moves go warm. Standbys is then the standbys for failover
	// per shard the fleet's policy asks for (StoreStandbys).
	Restore  time.Duration
	Standbys int
}

// Fleet is a running fleet of workers, each behind its own Proxy.
type Fleet struct {
	cfg     Config
	procs   *procfleet.Fleet
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
	Proxy   relay
	History string
	p       *procfleet.Worker
}

// Life is when one process of a worker ran: from just before it was
// started to when it was seen to exit (Exit zero: still running).
type Life = procfleet.Life

// Start starts the fleet's proxies and workers. On error, what was started
// is stopped.
func Start(cfg Config) (*Fleet, error) {
	switch {
	case cfg.Workers < 1 || cfg.Shards < 1:
		return nil, fmt.Errorf("chaos: config with %d workers, %d shards", cfg.Workers, cfg.Shards)
	case cfg.Etcd == nil && (cfg.Cluster == nil || len(cfg.Cluster.Clients) == 0):
		return nil, errors.New("chaos: config with neither a Consul cluster with client agents nor an etcd cluster")
	}
	args := append([]string{"worker", "--prefix", cfg.Prefix, "--shards", fmt.Sprint(cfg.Shards), "--rate", fmt.Sprint(cfg.Rate),
		"--offsets", cfg.DSN, "--log-level", "info"}, cfg.Lease...)
	if cfg.Restore > 0 {
		args = append(args, "--restore", cfg.Restore.String())
	}
	procs, err := procfleet.New(procfleet.Config{Bin: cfg.Shardd, Dir: cfg.Dir, Args: args})
	if err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, procs: procs}
	if cfg.Etcd == nil {
		for _, a := range cfg.Cluster.Clients {
			f.Agents = append(f.Agents, &Agent{Agent: a})
		}
	}
	for i := range cfg.Workers {
		w := &Worker{ID: fmt.Sprintf("w%02d", i+1)}
		var where []string
		if cfg.Etcd != nil {
			// Each worker talks to one member through its own proxy; its
			// zone is the member's.
			m := cfg.Etcd.Members[i%len(cfg.Etcd.Members)]
			px, err := NewTCPProxy(strings.TrimPrefix(m.ClientURL, "http://"))
			if err != nil {
				_ = f.Stop()
				return nil, err
			}
			w.Proxy, where = px, []string{"--etcd", px.Addr(), "--zone", m.Name}
		} else {
			// Each worker talks to its agent through its own proxy, and its
			// zone is its agent's (ZoneKill kills a zone).
			a := f.Agents[i%len(f.Agents)]
			px, err := NewProxy(a.HTTPAddr)
			if err != nil {
				_ = f.Stop()
				return nil, err
			}
			w.Agent, w.Proxy, where = a, px, []string{"--consul", px.Addr(), "--zone", a.Name}
			a.Workers = append(a.Workers, w)
		}
		f.Workers = append(f.Workers, w)
		if w.p, err = procs.Add(w.ID, where...); err != nil {
			_ = f.Stop()
			return nil, err
		}
		w.History = w.p.History
	}
	return f, nil
}

// start starts the worker's process again, under its ID.
func (w *Worker) start() error { return w.p.Start() }

func (w *Worker) signal(sig syscall.Signal) { w.p.Signal(sig) }

// kill9 kills the worker's process and waits for it to die.
func (w *Worker) kill9() error { return w.p.Kill(10 * time.Second) }

// Lives lists, per worker ID, when each of its processes ran: what closes
// the handler runs of a process killed before it could record their end.
func (f *Fleet) Lives() map[string][]Life { return f.procs.Lives() }

// HistoryFiles are the workers' histories.
func (f *Fleet) HistoryFiles() []string { return f.procs.HistoryFiles() }

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
		if w.p != nil {
			w.p.Signal(syscall.SIGCONT)
		}
	}
}

// Stop drains every worker (SIGTERM: final commits, shards released) and
// closes the proxies once the workers are gone.
func (f *Fleet) Stop() error {
	f.Heal()
	err := f.procs.Stop(20 * time.Second)
	for _, w := range f.Workers {
		if w.Proxy != nil {
			_ = w.Proxy.Close()
		}
	}
	return err
}
