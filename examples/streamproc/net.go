package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// netState is how one worker's host reaches the rest of the world.
type netState int32

const (
	netUp   netState = iota
	netDead          // the process is gone: calls fail, its goroutines stop for good
)

// host is one worker's process and network, simulated in-process: the
// coordinator and the offsets store are reached through it.
type host struct {
	id    string
	state atomic.Int32
	gone  chan struct{} // closed at the end of the run: lets a dead process's goroutines exit
}

func newHost(id string) *host { return &host{id: id, gone: make(chan struct{})} }

func (h *host) set(s netState) { h.state.Store(int32(s)) }
func (h *host) get() netState  { return netState(h.state.Load()) }

var errUnreachable = errors.New("network unreachable")

func (h *host) reach() error {
	if h.get() != netUp {
		return fmt.Errorf("%w: %w from %s", shard.ErrUnavailable, errUnreachable, h.id)
	}
	return nil
}

// coordinator is the host's view of the shared coordinator.
type coordinator struct {
	shard.Coordinator
	h *host
}

func (c coordinator) Configure(ctx context.Context, cfg shard.Config) (shard.Config, error) {
	if err := c.h.reach(); err != nil {
		return shard.Config{}, err
	}
	return c.Coordinator.Configure(ctx, cfg)
}

func (c coordinator) CreateSession(ctx context.Context, spec shard.SessionSpec) (shard.SessionID, error) {
	if err := c.h.reach(); err != nil {
		return "", err
	}
	return c.Coordinator.CreateSession(ctx, spec)
}

func (c coordinator) RenewSession(ctx context.Context, id shard.SessionID) error {
	if err := c.h.reach(); err != nil {
		return err
	}
	return c.Coordinator.RenewSession(ctx, id)
}

func (c coordinator) DestroySession(ctx context.Context, id shard.SessionID) error {
	if err := c.h.reach(); err != nil {
		return err
	}
	return c.Coordinator.DestroySession(ctx, id)
}

func (c coordinator) Join(ctx context.Context, id shard.SessionID, m shard.Member) error {
	if err := c.h.reach(); err != nil {
		return err
	}
	return c.Coordinator.Join(ctx, id, m)
}

func (c coordinator) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	if err := c.h.reach(); err != nil {
		return nil, err
	}
	return c.Coordinator.Acquire(ctx, id, want)
}

func (c coordinator) Release(ctx context.Context, id shard.SessionID, ids []shard.ID, why string) error {
	if err := c.h.reach(); err != nil {
		return err
	}
	return c.Coordinator.Release(ctx, id, ids, why)
}

func (c coordinator) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	if err := c.h.reach(); err != nil {
		return shard.Snapshot{}, err
	}
	return c.Coordinator.Watch(ctx, after)
}

// store is the host's view of the shared offsets store.
type store struct {
	offsets.Store
	h *host
}

func (s store) Fence(ctx context.Context, id shard.ID, token shard.Token) error {
	if err := s.h.reach(); err != nil {
		return err
	}
	return s.Store.Fence(ctx, id, token)
}

func (s store) Commit(ctx context.Context, id shard.ID, token shard.Token, offset int64) error {
	if err := s.h.reach(); err != nil {
		return err
	}
	return s.Store.Commit(ctx, id, token, offset)
}

func (s store) Load(ctx context.Context, id shard.ID) (offsets.Checkpoint, error) {
	if err := s.h.reach(); err != nil {
		return offsets.Checkpoint{}, err
	}
	return s.Store.Load(ctx, id)
}
