package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Store is an in-memory offsets.Store. The zero value is not usable; call New.
type Store struct {
	mu     sync.Mutex
	cps    map[shard.ID]offsets.Checkpoint
	closed bool
}

var _ offsets.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{cps: make(map[shard.ID]offsets.Checkpoint)}
}

// Fence raises the shard's floor to token; see offsets.Store.
func (st *Store) Fence(ctx context.Context, s shard.ID, token shard.Token) error {
	return st.update(ctx, "fence", s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) {
		return offsets.ApplyFence(cp, s, token)
	})
}

// Commit stores offset for the shard unless token is below its floor; see
// offsets.Store.
func (st *Store) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	return st.update(ctx, "commit", s, func(cp offsets.Checkpoint) (offsets.Checkpoint, error) {
		return offsets.ApplyCommit(cp, s, token, offset)
	})
}

// update is the atomic step: read, apply the rule, write, under one lock.
func (st *Store) update(ctx context.Context, op string, s shard.ID, apply func(offsets.Checkpoint) (offsets.Checkpoint, error)) error {
	if err := ctxErr(ctx, op, s); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return offsets.ErrClosed
	}
	cp, err := apply(st.cps[s])
	if err != nil {
		return err
	}
	st.cps[s] = cp
	return nil
}

// Load returns the shard's checkpoint; the zero Checkpoint for a shard never
// fenced or committed.
func (st *Store) Load(ctx context.Context, s shard.ID) (offsets.Checkpoint, error) {
	if err := ctxErr(ctx, "load", s); err != nil {
		return offsets.Checkpoint{}, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return offsets.Checkpoint{}, offsets.ErrClosed
	}
	if err := offsets.ValidShard(s); err != nil {
		return offsets.Checkpoint{}, err
	}
	return st.cps[s], nil
}

// Close drops every checkpoint. Later calls return offsets.ErrClosed; closing
// twice is not an error.
func (st *Store) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	st.cps = nil
	return nil
}

// ctxErr reports a done context with its cause too, so a caller can tell
// why its handler's context ended (revoked, lost) as well as that it did.
func ctxErr(ctx context.Context, op string, s shard.ID) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("offsets/memory: %s shard %s: %w: %w", op, s, err, cause)
	}
	return fmt.Errorf("offsets/memory: %s shard %s: %w", op, s, err)
}

// ProcessLocal is true: only this process sees the store's checkpoints
// (offsets.Local).
func (s *Store) ProcessLocal() bool { return true }
