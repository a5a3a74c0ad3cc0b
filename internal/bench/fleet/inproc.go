package fleet

import (
	"context"
	"sync"

	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/reqcount"
	"github.com/shardlease/shardlease/shard/etcd"
)

// inprocWorker is one worker in this process: its transport, which a
// crash cuts, and how to end it.
type inprocWorker struct {
	sev    *severable // on Consul
	etcd   *etcdLink  // on etcd
	cancel context.CancelFunc
	done   chan struct{} // closed when its run has returned
}

// etcdLink is an in-process worker's client of etcd: what it counts, and
// its coordinator, whose client a crash closes.
type etcdLink struct {
	requests etcd.RequestCounter
	coord    *procfleet.EtcdCoordinator
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
func (s *inprocWorkers) start(ctx context.Context, id string, sev *severable, link *etcdLink, run func(ctx context.Context)) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &inprocWorker{sev: sev, etcd: link, cancel: cancel, done: make(chan struct{})}
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
	if w.sev != nil {
		w.sev.sever()
	} else {
		w.etcd.coord.Sever()
	}
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

// each calls fn with every Consul worker's request tap, under the lock.
func (s *inprocWorkers) each(fn func(t *requestTap)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		if w.sev != nil {
			fn(&w.sev.requests)
		}
	}
}

// counters returns every worker's request counter, and the bytes the
// workers have read so far, on either engine.
func (s *inprocWorkers) counters() (requests []*reqcount.Counter, received int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		if w.sev != nil {
			requests, received = append(requests, &w.sev.requests.Counter), received+w.sev.requests.received.load()
		} else {
			requests, received = append(requests, &w.etcd.requests.Counter), received+w.etcd.requests.Received()
		}
	}
	return requests, received
}
