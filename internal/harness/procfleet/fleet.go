package procfleet

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// Config describes a fleet of worker processes.
type Config struct {
	// Bin is the worker binary: shardd (shardproc.Build), or another that
	// takes --id and --history as `shardd worker` does (apilockd).
	Bin string
	// Dir receives each worker's log (ID.log) and history (ID.jsonl).
	Dir string
	// Args are every worker's arguments (for shardd, "worker" first),
	// before its own (Add's) and its --id and --history.
	Args []string
	// FollowStarts makes the fleet read every worker's history as it grows
	// and record each handler's start line in Starts, by the worker's
	// wall clock: when work on a shard resumed.
	FollowStarts bool
}

// Fleet is the worker processes of one fleet, each worker an ID whose
// process may be killed and started again. Safe for concurrent use.
type Fleet struct {
	cfg    Config
	starts StartLog

	mu      sync.Mutex
	workers []*Worker // in the order added
}

// New prepares a fleet; Add starts its workers.
func New(cfg Config) (*Fleet, error) {
	if cfg.Bin == "" || cfg.Dir == "" {
		return nil, fmt.Errorf("procfleet: config with binary %q and directory %q: want both", cfg.Bin, cfg.Dir)
	}
	return &Fleet{cfg: cfg}, nil
}

// Add starts the first process of a new worker id, with args after the
// fleet's own, followed by --id and --history.
func (f *Fleet) Add(id string, args ...string) (*Worker, error) {
	f.mu.Lock()
	for _, w := range f.workers {
		if w.ID == id {
			f.mu.Unlock()
			return nil, fmt.Errorf("procfleet: worker %s added twice", id)
		}
	}
	w := &Worker{ID: id, History: filepath.Join(f.cfg.Dir, id+".jsonl"), Log: filepath.Join(f.cfg.Dir, id+".log"), f: f}
	w.args = append(append(append([]string{}, f.cfg.Args...), args...), "--id", id, "--history", w.History)
	f.workers = append(f.workers, w)
	f.mu.Unlock()
	return w, w.Start()
}

// Worker returns worker id, or nil.
func (f *Fleet) Worker(id string) *Worker {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.workers {
		if w.ID == id {
			return w
		}
	}
	return nil
}

// Workers lists the workers in the order they were added.
func (f *Fleet) Workers() []*Worker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Worker(nil), f.workers...)
}

// Starts is when each shard's latest handler started, as the workers'
// histories say (Config.FollowStarts; empty without it).
func (f *Fleet) Starts() *StartLog { return &f.starts }

// Lives lists, per worker ID, when each of its processes ran: what closes
// the handler runs of a process killed before it could record their end.
func (f *Fleet) Lives() map[string][]Life {
	out := map[string][]Life{}
	for _, w := range f.Workers() {
		out[w.ID] = w.Lives()
	}
	return out
}

// HistoryFiles are the workers' histories, in the order they were added.
func (f *Fleet) HistoryFiles() []string {
	var out []string
	for _, w := range f.Workers() {
		out = append(out, w.History)
	}
	return out
}

// Stop stops every worker at once (Worker.Stop: SIGCONT, SIGTERM, SIGKILL
// after within) and waits until all have exited, naming those that had to
// be killed.
func (f *Fleet) Stop(within time.Duration) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, w := range f.Workers() {
		wg.Go(func() {
			if err := w.Stop(within); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", w.ID, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
