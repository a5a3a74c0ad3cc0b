package inproc

import (
	"context"
	"fmt"
	"sync"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// Fleet is the set of workers run in this process, each a Member with its
// own fault layer. The zero Fleet is empty and ready; it is safe for
// concurrent use.
type Fleet[E any] struct {
	mu     sync.Mutex
	made   int                   // members made, started or not
	latest map[string]*Member[E] // by ID: the latest started under it
	all    []*Member[E]          // every member started, in start order
}

// New makes a member named id whose worker will reach coord through a
// fault layer (Member.Coordinator), numbered after every member made
// before it. It is not started: build its worker's configuration from it,
// then Start it.
func (f *Fleet[E]) New(id string, coord shard.Coordinator) *Member[E] {
	f.mu.Lock()
	f.made++
	n := f.made
	f.mu.Unlock()
	m := &Member[E]{ID: id, N: n, faults: faults.Wrap(coord), done: make(chan struct{})}
	m.killed, m.kill = context.WithCancel(context.Background())
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Start creates m's worker from cfg (its ID is m.ID), runs it until m
// crashes, leaves or the fleet stops, and adds m to the fleet as the
// latest member under its ID. An invalid cfg is worker.New's error, and m
// is not added.
func (f *Fleet[E]) Start(m *Member[E], cfg worker.Config) error {
	if m.w != nil {
		return fmt.Errorf("%w: %s (member %d)", ErrStarted, m.ID, m.N)
	}
	cfg.ID = m.ID
	w, err := worker.New(cfg)
	if err != nil {
		return err
	}
	m.w = w
	go func() {
		m.err = w.Run(m.ctx)
		close(m.done)
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.latest == nil {
		f.latest = map[string]*Member[E]{}
	}
	f.latest[m.ID] = m
	f.all = append(f.all, m)
	return nil
}

// Member returns the latest member started under id, or nil.
func (f *Fleet[E]) Member(id string) *Member[E] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest[id]
}

// All returns every member ever started, in start order.
func (f *Fleet[E]) All() []*Member[E] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Member[E](nil), f.all...)
}

// Running returns the members that should be running now — the latest
// under each ID, neither crashed nor told to leave — in start order.
func (f *Fleet[E]) Running() []*Member[E] {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Member[E]
	for _, m := range f.all {
		if f.latest[m.ID] == m && m.Running() {
			out = append(out, m)
		}
	}
	return out
}

// StopAll heals every member not crashed, stops every worker gracefully
// and waits until each Run has returned (see Member.Err); then it thaws
// crashed members, whose frozen handlers see Crashed and return without
// writing. A crashed member stays unreachable: it must not release what it
// held.
func (f *Fleet[E]) StopAll() {
	all := f.All()
	for _, m := range all {
		m.heal()
		m.cancel()
	}
	for _, m := range all {
		<-m.done
		m.gate.Open()
	}
}
