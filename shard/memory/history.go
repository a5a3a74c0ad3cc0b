package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// historyKey is P/history: its value and modify index (0 while missing).
type historyKey struct {
	value []byte
	index uint64
}

// history is the coordinator's shard.History.
type history struct{ c *Coordinator }

// History returns the coordinator's ownership history key.
func (c *Coordinator) History() shard.History { return history{c} }

// Record writes P/history in one write, after the check every Assign
// transaction starts with (the session holds P/assignor at epoch).
func (h history) Record(ctx context.Context, id shard.SessionID, epoch shard.Token, value []byte) error {
	c := h.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := shard.CheckHistorySize(value); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if err := c.checkAssignorLocked(id, epoch); err != nil {
		return fmt.Errorf("record history: %w", err)
	}
	c.history = historyKey{value: slices.Clone(value), index: c.commitLocked()}
	return nil
}

// Read returns P/history's value and modify index.
func (h history) Read(ctx context.Context) ([]byte, uint64, error) {
	c := h.c
	if err := ctxErr(ctx); err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()
	return slices.Clone(c.history.value), c.history.index, nil
}
