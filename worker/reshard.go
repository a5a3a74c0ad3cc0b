package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// ErrNotClosing: Claim.Close was called for a shard the fleet is not
// resharding away (Claim.Closing is not closed); nothing was committed.
var ErrNotClosing = errors.New("worker: shard is not closing")

// ShardCloser is implemented by a handler that can say it does not close
// shards for a reshard (package exec's Supervisor: a child process has no
// way to be told). A worker whose handler says false does not speak the
// protocol step shard.StepReshard, so no reshard starts while it is live
// (admin.Reshard names it). A handler that does not implement it is taken
// to close its shards when asked (Claim.Closing).
type ShardCloser interface {
	ClosesShards() bool
}

// steps are the protocol steps this worker speaks (stepsOf).
func (w *Worker) steps() []string { return stepsOf(w.cfg.Handler) }

// stepsOf is the protocol steps a worker running h speaks: this build's,
// less shard.StepReshard when h cannot close a shard.
func stepsOf(h Handler) []string {
	if c, ok := h.(ShardCloser); ok && !c.ClosesShards() {
		return slices.DeleteFunc(shard.Steps(), func(s string) bool { return s == shard.StepReshard })
	}
	return shard.Steps()
}

// closeSignal is how the loop asks a runner's handler to close its shard
// (Claim.Closing), and withdraws the ask when the assignment no longer
// makes it (a cancelled reshard): a late Close is then refused, so that a
// later reshard cannot take this one's end for its own, and Closing is a
// fresh channel again.
type closeSignal struct {
	asked atomic.Bool // asked now
	mu    sync.Mutex
	ch    chan struct{} // closed while asked
}

func newCloseSignal() *closeSignal { return &closeSignal{ch: make(chan struct{})} }

// channel is the channel Claim.Closing returns now.
func (s *closeSignal) channel() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// ask asks, and reports whether it was not asked before.
func (s *closeSignal) ask() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked.Load() {
		return false
	}
	s.asked.Store(true)
	close(s.ch)
	return true
}

// unask withdraws the ask, and reports whether there was one.
func (s *closeSignal) unask() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.asked.Load() {
		return false
	}
	s.asked.Store(false)
	s.ch = make(chan struct{})
	return true
}

// errClosed is runShard's word that the handler closed its shard.
var errClosed = errors.New("shard closed for a reshard")

// Closing is closed when the fleet reshards and this shard is a parent:
// the handler is to run its shard to its end (for a stream, the position
// where the producer switched to the new layout, often marked in the
// stream itself), commit that end with Close, and return. The shard is
// then released for good, and its children start with Parents set to its
// final checkpoint. A Claim no Worker issued never closes: Closing is nil.
//
// When the reshard is cancelled before the handler closed, the ask is
// withdrawn: Close then fails with ErrNotClosing and the handler goes on
// processing; Closing returns a new channel, closed if it is asked again.
func (c *Claim) Closing() <-chan struct{} {
	if c.closing == nil {
		return nil
	}
	return c.closing.channel()
}

// Close commits offset, the shard's end, with the claim's token (as
// Commit does) and marks the shard closed: once the handler returns, the
// worker releases its lock as closed (shard.ReasonClosed) instead of
// restarting the handler, and the assignor opens the shard's children
// once all their parents are closed. Only a closing claim closes
// (ErrNotClosing otherwise, nothing committed: also once the reshard
// that asked was cancelled); a commit that fails
// (ErrLost, offsets.ErrStaleToken) leaves the shard open, and whoever owns
// it next is told to close it again and resumes from the last commit.
func (c *Claim) Close(ctx context.Context, offset int64) error {
	return c.CloseWith(ctx, func(ctx context.Context) error {
		if c.w == nil || c.auth == nil {
			return fmt.Errorf("%w: the claim on shard %q was not issued by a worker", ErrLost, c.Shard)
		}
		return c.w.cfg.Offsets.Commit(ctx, c.Shard, c.Token, offset)
	})
}

// CloseWith is Close for a handler that commits with its own fenced
// write (see CommitWith): commit is the shard's last effect.
func (c *Claim) CloseWith(ctx context.Context, commit func(ctx context.Context) error) error {
	if c.closing == nil || !c.closing.asked.Load() {
		return fmt.Errorf("%w: %s is not asked to close (Claim.Closing; or the reshard was cancelled since)", ErrNotClosing, c.Shard)
	}
	if err := c.CommitWith(ctx, commit); err != nil {
		return err
	}
	c.closed.Store(true)
	return nil
}

// closedShards are the shards this worker closed, in every term: it never
// acquires one again while its assignment still asks it to close it (the
// assignor's keys lag the release by a listing). A key that lists the
// shard without asking to close it (a cancelled reshard) clears it.
type closedShards struct {
	mu  sync.Mutex
	ids map[shard.ID]bool
}

func (s *closedShards) add(id shard.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[shard.ID]bool{}
	}
	s.ids[id] = true
}

// skip reports whether id is not to be acquired under an assignment
// whose shards to close are closing, and forgets id when it may be.
func (s *closedShards) skip(id shard.ID, closing map[shard.ID]bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ids[id] {
		return false
	}
	if !closing[id] {
		delete(s.ids, id)
		return false
	}
	return true
}

// parents fences each parent of a child shard with the child's token and
// loads its checkpoint: its end, as its last owner closed it. The fence
// makes the store refuse any later commit of a parent's owner (a paused
// one, say), whose tokens are all below the child's; a sibling that
// fenced a parent with a higher token already did, so a refused fence is
// not an error. Nil for a shard that is no child (w.fleetConfig).
func (w *Worker) parents(ctx context.Context, claim shard.Claim) (map[shard.ID]offsets.Checkpoint, error) {
	cfg, err := w.fleetConfig(ctx, claim.Shard)
	if err != nil {
		return nil, err
	}
	ps := cfg.ParentsOf(claim.Shard)
	if len(ps) == 0 {
		return nil, nil
	}
	out := make(map[shard.ID]offsets.Checkpoint, len(ps))
	for _, p := range ps {
		if err := w.cfg.Offsets.Fence(ctx, p, claim.Token); err != nil && !errors.Is(err, offsets.ErrStaleToken) {
			return nil, fmt.Errorf("fencing parent %s: %w", p, err)
		}
		cp, err := w.cfg.Offsets.Load(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("loading parent %s: %w", p, err)
		}
		out[p] = cp
	}
	return out, nil
}

// fleetConfig returns the fleet's stored config as this worker last read
// it, read again (Configure answers with it) when it does not know id: a
// shard of a layout added since.
func (w *Worker) fleetConfig(ctx context.Context, id shard.ID) (shard.Config, error) {
	if cfg := w.fleet.Load(); cfg != nil {
		if _, _, ok := cfg.Locate(id); ok {
			return *cfg, nil
		}
	}
	stored, err := w.cfg.Coordinator.Fleet().Configure(ctx, w.cfg.Fleet)
	if err != nil {
		return shard.Config{}, err
	}
	w.fleet.Store(&stored)
	return stored, nil
}
