package memory

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/shard"
)

// SetFreeze writes P/freeze (mark non-nil) or deletes it (nil), one write
// either way; deleting a missing freeze writes nothing.
func (f fleet) SetFreeze(ctx context.Context, mark *shard.Mark) error {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if mark != nil && mark.By == "" {
		return fmt.Errorf("%w: freeze mark has an empty by (who froze the fleet)", shard.ErrInvalidArgument)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if mark == nil && c.freeze == nil {
		return nil
	}
	c.commitLocked()
	if mark == nil {
		c.freeze = nil
		return nil
	}
	m := *mark
	c.freeze = &m
	return nil
}
