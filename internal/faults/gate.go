package faults

import (
	"context"
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// Gate freezes the goroutines that pass through it while it is closed, the
// way a stop-the-world pause freezes a process. The zero Gate is open.
type Gate struct {
	mu     sync.Mutex
	closed chan struct{} // non-nil while closed; closed (the channel) on Open
}

// Close makes Wait block until Open.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// Open releases every waiter.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// Wait returns at once while the gate is open; otherwise it blocks until the
// gate opens (true) or ctx ends (false). A paused process does not notice
// its context ending, so callers simulating a pause pass
// context.Background().
func (g *Gate) Wait(ctx context.Context) bool {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	return shard.Hold(ctx, ch) == nil
}
