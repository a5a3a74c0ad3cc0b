package fleet

import (
	"context"
	"sync"
)

// inprocWorker is one worker in this process: its transport, which a
// crash cuts, and how to end it.
type inprocWorker struct {
	sev    *severable
	cancel context.CancelFunc
	done   chan struct{} // closed when its run has returned
}

// inprocWorkers are a fleet's workers in this process (Shardlease's and
// Baseline's). The zero value is ready.
type inprocWorkers struct {
	mu      sync.Mutex
	workers map[string]*inprocWorker
	reaping sync.WaitGroup
}

// start runs worker id until it is crashed or stopped: run gets a context
// that outlives ctx (the Add's) and ends with Crash, Stop or Close, and
// sev, the worker's transport.
func (s *inprocWorkers) start(ctx context.Context, id string, sev *severable, run func(ctx context.Context)) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &inprocWorker{sev: sev, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.workers == nil {
		s.workers = map[string]*inprocWorker{}
	}
	s.workers[id] = w
	s.mu.Unlock()
	go func() {
		defer close(w.done)
		run(wctx)
	}()
}

// crash cuts worker id's transport, so that nothing more of it reaches
// the agent, and ends it; what is left of it is reaped in the background.
// It reports whether there was such a worker.
func (s *inprocWorkers) crash(id string) bool {
	w := takeWorker(&s.mu, s.workers, id)
	if w == nil {
		return false
	}
	w.sev.sever()
	w.cancel() // its run now fails every call and returns
	s.reaping.Add(1)
	go func() { defer s.reaping.Done(); <-w.done }()
	return true
}

// stop ends worker id cleanly (its run drains and releases what it holds);
// the channel closes when it has.
func (s *inprocWorkers) stop(id string) <-chan struct{} {
	w := takeWorker(&s.mu, s.workers, id)
	if w == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	w.cancel()
	return w.done
}

// close stops every worker and waits for them and the crashed ones.
func (s *inprocWorkers) close() {
	stopEvery(&s.mu, s.workers, s.stop)
	s.reaping.Wait()
}

// ids lists the workers' IDs: the members of a fleet that keeps no member
// list of its own.
func (s *inprocWorkers) ids() []string { return members(&s.mu, s.workers) }

// each calls fn with every worker's request tap, under the lock.
func (s *inprocWorkers) each(fn func(t *requestTap)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		fn(&w.sev.requests)
	}
}
