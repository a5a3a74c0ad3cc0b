package main

import (
	"context"
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// pausable is worker A's view of the coordinator. While paused, every call
// waits (as nothing leaves a stopped process): no renewal reaches the
// coordinator, so A's session expires. The same pause holds A's prepared
// write (see wait).
type pausable struct {
	shard.Coordinator
	mu      sync.Mutex
	resumed chan struct{} // nil while running; closed on resume
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
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (p *pausable) Configure(ctx context.Context, cfg shard.Config) (shard.Config, error) {
	if err := p.wait(ctx); err != nil {
		return shard.Config{}, err
	}
	return p.Coordinator.Configure(ctx, cfg)
}

func (p *pausable) CreateSession(ctx context.Context, spec shard.SessionSpec) (shard.SessionID, error) {
	if err := p.wait(ctx); err != nil {
		return "", err
	}
	return p.Coordinator.CreateSession(ctx, spec)
}

func (p *pausable) RenewSession(ctx context.Context, id shard.SessionID) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	return p.Coordinator.RenewSession(ctx, id)
}

func (p *pausable) DestroySession(ctx context.Context, id shard.SessionID) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	return p.Coordinator.DestroySession(ctx, id)
}

func (p *pausable) Join(ctx context.Context, id shard.SessionID, m shard.Member) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	return p.Coordinator.Join(ctx, id, m)
}

func (p *pausable) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	return p.Coordinator.Acquire(ctx, id, want)
}

func (p *pausable) Release(ctx context.Context, id shard.SessionID, shards []shard.ID, why string) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	return p.Coordinator.Release(ctx, id, shards, why)
}

func (p *pausable) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	if err := p.wait(ctx); err != nil {
		return shard.Snapshot{}, err
	}
	return p.Coordinator.Watch(ctx, after)
}

func (p *pausable) WatchMember(ctx context.Context, id string, after uint64) (shard.MemberKey, error) {
	if err := p.wait(ctx); err != nil {
		return shard.MemberKey{}, err
	}
	return p.Coordinator.WatchMember(ctx, id, after)
}

func (p *pausable) Campaign(ctx context.Context, id shard.SessionID, worker string) (shard.Token, bool, error) {
	if err := p.wait(ctx); err != nil {
		return 0, false, err
	}
	return p.Coordinator.Campaign(ctx, id, worker)
}

func (p *pausable) Resign(ctx context.Context, id shard.SessionID) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	return p.Coordinator.Resign(ctx, id)
}

func (p *pausable) WatchAssignor(ctx context.Context, after uint64) (shard.AssignorKey, error) {
	if err := p.wait(ctx); err != nil {
		return shard.AssignorKey{}, err
	}
	return p.Coordinator.WatchAssignor(ctx, after)
}

func (p *pausable) Assign(ctx context.Context, id shard.SessionID, epoch shard.Token, set map[string]*shard.Assignment) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	return p.Coordinator.Assign(ctx, id, epoch, set)
}

func (p *pausable) WatchAssignment(ctx context.Context, worker string, after uint64) (shard.AssignmentKey, error) {
	if err := p.wait(ctx); err != nil {
		return shard.AssignmentKey{}, err
	}
	return p.Coordinator.WatchAssignment(ctx, worker, after)
}
