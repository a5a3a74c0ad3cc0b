// Package netsim simulates, in-process, the network between one example
// process and the shared coordinator and store: a host can be up,
// partitioned (every call fails at once) or dead. The examples use it to
// kill and cut off instances without leaving the public API.
package netsim

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// State is how a host reaches the rest of the world.
type State int32

const (
	Up          State = iota
	Partitioned       // every call fails at once, as across a broken network
	Dead              // the process is gone: calls fail, its goroutines stop for good
)

// Host is one process and its network, simulated in-process: the
// coordinator and the store are reached through it.
type Host struct {
	ID    string
	state atomic.Int32
	Gone  chan struct{} // closed at the end of the run: lets a dead process's goroutines exit
}

// NewHost returns a reachable host.
func NewHost(id string) *Host { return &Host{ID: id, Gone: make(chan struct{})} }

// Set changes how the host reaches the world.
func (h *Host) Set(s State) { h.state.Store(int32(s)) }

// Get returns how the host reaches the world.
func (h *Host) Get() State { return State(h.state.Load()) }

// ErrUnreachable: the host is partitioned or dead.
var ErrUnreachable = errors.New("network unreachable")

// Reach fails unless the host is up.
func (h *Host) Reach() error {
	if h.Get() != Up {
		return fmt.Errorf("%w: %w from %s", shard.ErrUnavailable, ErrUnreachable, h.ID)
	}
	return nil
}

// Coordinator is the host's view of the shared coordinator: every call
// fails at once unless the host is up.
func Coordinator(c shard.Coordinator, h *Host) shard.Coordinator {
	return shard.Intercept(c, func(ctx context.Context, _ *shard.Call, invoke func(context.Context) error) error {
		if err := h.Reach(); err != nil {
			return err
		}
		return invoke(ctx)
	})
}

// Store is the host's view of the shared store.
type Store struct {
	offsets.Store
	H *Host
}

func (s Store) Fence(ctx context.Context, id shard.ID, token shard.Token) error {
	if err := s.H.Reach(); err != nil {
		return err
	}
	return s.Store.Fence(ctx, id, token)
}

func (s Store) Commit(ctx context.Context, id shard.ID, token shard.Token, offset int64) error {
	if err := s.H.Reach(); err != nil {
		return err
	}
	return s.Store.Commit(ctx, id, token, offset)
}

func (s Store) Load(ctx context.Context, id shard.ID) (offsets.Checkpoint, error) {
	if err := s.H.Reach(); err != nil {
		return offsets.Checkpoint{}, err
	}
	return s.Store.Load(ctx, id)
}
