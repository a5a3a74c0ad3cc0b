package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// testPolicy is Consul's shape of policy: 10 s TTL, renew every 2 s, 5 s of
// pause budget, so the local deadline is 5 s after a renewal starts, and
// the shortest lock-delay the rule allows, the same 5 s.
var testPolicy = shard.LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second, LockDelay: testLockDelay}

const testLockDelay = 5 * time.Second

// fleet runs workers in one synctest bubble against one embedded coordinator
// and one in-memory offset store.
type fleet struct {
	t       *testing.T
	coord   *memory.Coordinator
	store   *offmem.Store
	shards  shard.Config
	events  *events
	mu      sync.Mutex
	running map[string]*member
}

type member struct {
	w      *worker.Worker
	faults *faults.Coordinator
	cancel context.CancelFunc
	done   chan error
}

func newFleet(t *testing.T, shards int) *fleet {
	return &fleet{t: t, coord: memory.New(), store: offmem.New(), shards: shard.Config{Shards: shards},
		events: &events{}, running: map[string]*member{}}
}

func (f *fleet) config(id string, h worker.Handler) worker.Config {
	return worker.Config{ID: id, Fleet: f.shards, Coordinator: nil, Offsets: f.store, Handler: h,
		Policy: testPolicy, JitterSeed: uint64(len(id)*7919 + int(id[len(id)-1]))}
}

// start runs a worker with h (nil: a handler that records and waits).
func (f *fleet) start(id string, h worker.Handler) *member {
	f.t.Helper()
	if h == nil {
		h = f.events.waiting(id)
	}
	return f.startWith(f.config(id, h))
}

// startWith runs a worker with cfg, its Coordinator set to a faults
// wrapper of the fleet's.
func (f *fleet) startWith(cfg worker.Config) *member {
	f.t.Helper()
	return f.startWrapped(cfg, nil)
}

// startWrapped is startWith with the faults wrapper wrapped again by wrap
// (nil: not), for a worker whose coordinator misbehaves in a way of its own.
func (f *fleet) startWrapped(cfg worker.Config, wrap func(shard.Coordinator) shard.Coordinator) *member {
	f.t.Helper()
	id := cfg.ID
	fc := faults.Wrap(f.coord)
	cfg.Coordinator = fc
	if wrap != nil {
		cfg.Coordinator = wrap(fc)
	}
	w, err := worker.New(cfg)
	if err != nil {
		f.t.Fatalf("worker.New(%s): %v", id, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{w: w, faults: fc, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- w.Run(ctx) }()
	f.mu.Lock()
	f.running[id] = m
	f.mu.Unlock()
	f.t.Cleanup(func() { f.stop(id) })
	return m
}

// stop shuts a worker down gracefully and returns Run's error.
func (f *fleet) stop(id string) error {
	f.mu.Lock()
	m := f.running[id]
	delete(f.running, id)
	f.mu.Unlock()
	if m == nil {
		return nil
	}
	m.faults.Set(faults.Healthy)
	m.cancel()
	return <-m.done
}

func (f *fleet) snapshot() shard.Snapshot {
	f.t.Helper()
	s, err := f.coord.Fleet().Watch(context.Background(), 0)
	if err != nil {
		f.t.Fatalf("snapshot: %v", err)
	}
	return s
}

// owners maps each held shard to the worker ID of its holder.
func (f *fleet) owners() map[shard.ID]string { return f.snapshot().Owners() }

func counts(owners map[shard.ID]string) map[string]int {
	c := map[string]int{}
	for _, w := range owners {
		c[w]++
	}
	return c
}

func spread(c map[string]int) int {
	lo, hi, first := 0, 0, true
	for _, n := range c {
		if first || n < lo {
			lo = n
		}
		if first || n > hi {
			hi = n
		}
		first = false
	}
	return hi - lo
}

// event is one handler start or end.
type event struct {
	worker string
	shard  shard.ID
	token  shard.Token
	start  bool
	at     time.Time
	cause  error // on end
	offset int64 // on start: the loaded checkpoint's offset
}

type events struct {
	mu  sync.Mutex
	all []event
}

func (e *events) add(ev event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.at = time.Now()
	e.all = append(e.all, ev)
}

func (e *events) list() []event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]event(nil), e.all...)
}

// waiting is a handler that records its start, waits for ownership to end
// and records the cause.
func (e *events) waiting(id string) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		e.add(event{worker: id, shard: c.Shard, token: c.Token, start: true, offset: c.Start.Offset})
		<-ctx.Done()
		e.add(event{worker: id, shard: c.Shard, token: c.Token, cause: context.Cause(ctx)})
		return nil
	})
}

func isLost(err error) bool    { return errors.Is(err, worker.ErrLost) }
func isRevoked(err error) bool { return errors.Is(err, worker.ErrRevoked) }
