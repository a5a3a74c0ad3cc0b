package main

import (
	"context"
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// pausable is worker A's view of the coordinator. While paused, every
// call waits (as nothing leaves a stopped process): no renewal reaches the
// coordinator, so A's session expires, and no load report or any other
// write leaves it either. The same pause holds A's prepared write (see
// wait).
type pausable struct {
	shard.Coordinator
	mu      sync.Mutex
	resumed chan struct{} // nil while running; closed on resume
}

// newPausable returns c as seen by a process that can be paused.
func newPausable(c shard.Coordinator) *pausable {
	p := &pausable{}
	p.Coordinator = shard.Intercept(c, func(ctx context.Context, _ *shard.Call, invoke func(context.Context) error) error {
		if err := p.wait(ctx); err != nil {
			return err
		}
		return invoke(ctx)
	})
	return p
}

func (p *pausable) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed == nil {
		p.resumed = make(chan struct{})
	}
}

func (p *pausable) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed != nil {
		close(p.resumed)
		p.resumed = nil
	}
}

// wait returns at once while running; while paused it returns on resume or
// when ctx ends (with its cause).
func (p *pausable) wait(ctx context.Context) error {
	p.mu.Lock()
	ch := p.resumed
	p.mu.Unlock()
	return shard.Hold(ctx, ch)
}
