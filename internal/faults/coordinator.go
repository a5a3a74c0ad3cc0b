package faults

import (
	"context"
	"fmt"
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// Mode is how a wrapped coordinator treats calls.
type Mode int

// Modes.
const (
	// Healthy passes calls through.
	Healthy Mode = iota
	// Hang makes every call block until the mode changes or ctx ends: a
	// paused process or a stalled connection.
	Hang
	// Fail makes every call fail at once with shard.ErrUnavailable: a
	// crashed process or a partition.
	Fail
)

// Coordinator wraps a shard.Coordinator for one worker and lets a test or
// the demo change how that worker's calls behave.
type Coordinator struct {
	inner shard.Coordinator

	mu      sync.Mutex
	mode    Mode
	changed chan struct{} // closed and replaced on every mode change
}

var _ shard.Coordinator = (*Coordinator)(nil)

// Wrap returns a healthy wrapper around c.
func Wrap(c shard.Coordinator) *Coordinator {
	return &Coordinator{inner: c, changed: make(chan struct{})}
}

// Set changes the mode; calls blocked by Hang re-evaluate at once.
func (f *Coordinator) Set(m Mode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = m
	close(f.changed)
	f.changed = make(chan struct{})
}

// Mode returns the current mode.
func (f *Coordinator) Mode() Mode {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mode
}

// admit decides a call's fate before it reaches the inner coordinator.
func (f *Coordinator) admit(ctx context.Context, op string) error {
	for {
		f.mu.Lock()
		mode, changed := f.mode, f.changed
		f.mu.Unlock()
		switch mode {
		case Healthy:
			return nil
		case Fail:
			return fmt.Errorf("%w: %s: injected failure", shard.ErrUnavailable, op)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (f *Coordinator) Configure(ctx context.Context, cfg shard.Config) (shard.Config, error) {
	if err := f.admit(ctx, "configure"); err != nil {
		return shard.Config{}, err
	}
	return f.inner.Configure(ctx, cfg)
}

func (f *Coordinator) CreateSession(ctx context.Context, spec shard.SessionSpec) (shard.SessionID, error) {
	if err := f.admit(ctx, "create session"); err != nil {
		return "", err
	}
	return f.inner.CreateSession(ctx, spec)
}

func (f *Coordinator) RenewSession(ctx context.Context, id shard.SessionID) error {
	if err := f.admit(ctx, "renew session"); err != nil {
		return err
	}
	return f.inner.RenewSession(ctx, id)
}

func (f *Coordinator) DestroySession(ctx context.Context, id shard.SessionID) error {
	if err := f.admit(ctx, "destroy session"); err != nil {
		return err
	}
	return f.inner.DestroySession(ctx, id)
}

func (f *Coordinator) Join(ctx context.Context, id shard.SessionID, m shard.Member) error {
	if err := f.admit(ctx, "join"); err != nil {
		return err
	}
	return f.inner.Join(ctx, id, m)
}

func (f *Coordinator) ReportLoad(ctx context.Context, id shard.SessionID, worker string, load map[shard.ID]float64) error {
	if err := f.admit(ctx, "report load"); err != nil {
		return err
	}
	return f.inner.ReportLoad(ctx, id, worker, load)
}

func (f *Coordinator) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	if err := f.admit(ctx, "acquire"); err != nil {
		return nil, err
	}
	return f.inner.Acquire(ctx, id, want)
}

func (f *Coordinator) Release(ctx context.Context, id shard.SessionID, shards []shard.ID, why string) error {
	if err := f.admit(ctx, "release"); err != nil {
		return err
	}
	return f.inner.Release(ctx, id, shards, why)
}

// Watch and WatchMember are blocking queries: one that was already waiting
// when the mode turned to Hang or Fail does not deliver its answer either
// (a cut connection loses the reply), so a cut-off worker learns nothing
// from the coordinator until the mode is Healthy again.
func (f *Coordinator) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	if err := f.admit(ctx, "watch"); err != nil {
		return shard.Snapshot{}, err
	}
	s, err := f.inner.Watch(ctx, after)
	if aerr := f.admit(ctx, "watch"); aerr != nil {
		return shard.Snapshot{}, aerr
	}
	return s, err
}

func (f *Coordinator) WatchMember(ctx context.Context, id string, after uint64) (shard.MemberKey, error) {
	if err := f.admit(ctx, "watch member"); err != nil {
		return shard.MemberKey{}, err
	}
	k, err := f.inner.WatchMember(ctx, id, after)
	if aerr := f.admit(ctx, "watch member"); aerr != nil {
		return shard.MemberKey{}, aerr
	}
	return k, err
}

func (f *Coordinator) Campaign(ctx context.Context, id shard.SessionID, worker string) (shard.Token, bool, error) {
	if err := f.admit(ctx, "campaign"); err != nil {
		return 0, false, err
	}
	return f.inner.Campaign(ctx, id, worker)
}

func (f *Coordinator) Resign(ctx context.Context, id shard.SessionID) error {
	if err := f.admit(ctx, "resign"); err != nil {
		return err
	}
	return f.inner.Resign(ctx, id)
}

func (f *Coordinator) Assign(ctx context.Context, id shard.SessionID, epoch shard.Token, set map[string]*shard.Assignment) error {
	if err := f.admit(ctx, "assign"); err != nil {
		return err
	}
	return f.inner.Assign(ctx, id, epoch, set)
}

// WatchAssignor and WatchAssignment are blocking queries, as Watch is.
func (f *Coordinator) WatchAssignor(ctx context.Context, after uint64) (shard.AssignorKey, error) {
	if err := f.admit(ctx, "watch assignor"); err != nil {
		return shard.AssignorKey{}, err
	}
	k, err := f.inner.WatchAssignor(ctx, after)
	if aerr := f.admit(ctx, "watch assignor"); aerr != nil {
		return shard.AssignorKey{}, aerr
	}
	return k, err
}

func (f *Coordinator) WatchAssignment(ctx context.Context, worker string, after uint64) (shard.AssignmentKey, error) {
	if err := f.admit(ctx, "watch assignment"); err != nil {
		return shard.AssignmentKey{}, err
	}
	k, err := f.inner.WatchAssignment(ctx, worker, after)
	if aerr := f.admit(ctx, "watch assignment"); aerr != nil {
		return shard.AssignmentKey{}, aerr
	}
	return k, err
}

func (f *Coordinator) SetFreeze(ctx context.Context, mark *shard.Mark) error {
	if err := f.admit(ctx, "set freeze"); err != nil {
		return err
	}
	return f.inner.SetFreeze(ctx, mark)
}
