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
// the demo change how that worker's calls behave. Every call passes
// through one interceptor (shard.Intercept), so every method, present and
// future, obeys the mode.
type Coordinator struct {
	shard.Coordinator

	mu      sync.Mutex
	mode    Mode
	changed chan struct{} // closed and replaced on every mode change
}

// Wrap returns a healthy wrapper around c.
func Wrap(c shard.Coordinator) *Coordinator {
	f := &Coordinator{changed: make(chan struct{})}
	f.Coordinator = shard.Intercept(c, f.intercept)
	return f
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

// intercept admits a call before it reaches the inner coordinator. A
// blocking query (a watch) that was already waiting when the mode turned
// to Hang or Fail does not deliver its answer either (a cut connection
// loses the reply), so a cut-off worker learns nothing from the
// coordinator until the mode is Healthy again.
func (f *Coordinator) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if err := f.admit(ctx, call.Op); err != nil {
		return err
	}
	err := invoke(ctx)
	if call.Op.Blocking() {
		if aerr := f.admit(ctx, call.Op); aerr != nil {
			return aerr
		}
	}
	return err
}

// admit decides a call's fate before it reaches the inner coordinator.
func (f *Coordinator) admit(ctx context.Context, op shard.Op) error {
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
		if err := shard.Hold(ctx, changed); err != nil {
			return err
		}
	}
}
