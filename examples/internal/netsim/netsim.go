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

// Coordinator is the host's view of the shared coordinator.
type Coordinator struct {
	shard.Coordinator
	H *Host
}

func (c Coordinator) Configure(ctx context.Context, cfg shard.Config) (shard.Config, error) {
	if err := c.H.Reach(); err != nil {
		return shard.Config{}, err
	}
	return c.Coordinator.Configure(ctx, cfg)
}

func (c Coordinator) CreateSession(ctx context.Context, spec shard.SessionSpec) (shard.SessionID, error) {
	if err := c.H.Reach(); err != nil {
		return "", err
	}
	return c.Coordinator.CreateSession(ctx, spec)
}

func (c Coordinator) RenewSession(ctx context.Context, id shard.SessionID) error {
	if err := c.H.Reach(); err != nil {
		return err
	}
	return c.Coordinator.RenewSession(ctx, id)
}

func (c Coordinator) DestroySession(ctx context.Context, id shard.SessionID) error {
	if err := c.H.Reach(); err != nil {
		return err
	}
	return c.Coordinator.DestroySession(ctx, id)
}

func (c Coordinator) Join(ctx context.Context, id shard.SessionID, m shard.Member) error {
	if err := c.H.Reach(); err != nil {
		return err
	}
	return c.Coordinator.Join(ctx, id, m)
}

func (c Coordinator) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	if err := c.H.Reach(); err != nil {
		return nil, err
	}
	return c.Coordinator.Acquire(ctx, id, want)
}

func (c Coordinator) Release(ctx context.Context, id shard.SessionID, ids []shard.ID, why string) error {
	if err := c.H.Reach(); err != nil {
		return err
	}
	return c.Coordinator.Release(ctx, id, ids, why)
}

func (c Coordinator) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	if err := c.H.Reach(); err != nil {
		return shard.Snapshot{}, err
	}
	return c.Coordinator.Watch(ctx, after)
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

func (c Coordinator) WatchMember(ctx context.Context, id string, after uint64) (shard.MemberKey, error) {
	if err := c.H.Reach(); err != nil {
		return shard.MemberKey{}, err
	}
	return c.Coordinator.WatchMember(ctx, id, after)
}

func (c Coordinator) Campaign(ctx context.Context, id shard.SessionID, worker string) (shard.Token, bool, error) {
	if err := c.H.Reach(); err != nil {
		return 0, false, err
	}
	return c.Coordinator.Campaign(ctx, id, worker)
}

func (c Coordinator) Resign(ctx context.Context, id shard.SessionID) error {
	if err := c.H.Reach(); err != nil {
		return err
	}
	return c.Coordinator.Resign(ctx, id)
}

func (c Coordinator) WatchAssignor(ctx context.Context, after uint64) (shard.AssignorKey, error) {
	if err := c.H.Reach(); err != nil {
		return shard.AssignorKey{}, err
	}
	return c.Coordinator.WatchAssignor(ctx, after)
}

func (c Coordinator) Assign(ctx context.Context, id shard.SessionID, epoch shard.Token, set map[string]*shard.Assignment) error {
	if err := c.H.Reach(); err != nil {
		return err
	}
	return c.Coordinator.Assign(ctx, id, epoch, set)
}

func (c Coordinator) WatchAssignment(ctx context.Context, worker string, after uint64) (shard.AssignmentKey, error) {
	if err := c.H.Reach(); err != nil {
		return shard.AssignmentKey{}, err
	}
	return c.Coordinator.WatchAssignment(ctx, worker, after)
}
