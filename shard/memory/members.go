package memory

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/shard"
)

// Join registers m under its ID with the session, in one write: it takes the
// member key if it is missing or dead (held by no session), or updates its
// value if this session already holds it. An empty ID wraps
// shard.ErrInvalidArgument; a key held by another session wraps
// shard.ErrMemberExists and names the ID; a gone session wraps
// shard.ErrSessionInvalid.
//
// Unlike Consul, member keys get no lock-delay when their session is
// invalidated, so a crashed worker that restarts under the same ID can join
// again as soon as its old session is gone.
func (c *Coordinator) Join(ctx context.Context, id shard.SessionID, m shard.Member) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if m.ID == "" {
		return fmt.Errorf("%w: member id is empty", shard.ErrInvalidArgument)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if _, err := c.liveSessionLocked(id); err != nil {
		return err
	}
	k := c.members[m.ID]
	if k != nil && k.session != "" && k.session != id {
		return fmt.Errorf("%w: worker %q is held by session %q", shard.ErrMemberExists, m.ID, k.session)
	}
	if k != nil && k.gcTimer != nil {
		k.gcTimer.Stop() // alive again: no deletion pending
	}
	idx := c.commitLocked()
	c.members[m.ID] = &memberKey{member: m, session: id, index: idx}
	return nil
}

// collectMemberLocked deletes a dead member key whose grace has passed, in one
// write. Dead members are ignored by the planner at once; deleting them only
// keeps snapshots from growing with every worker that ever lived.
func (c *Coordinator) collectMemberLocked(id string) {
	k := c.members[id]
	if k == nil || k.session != "" {
		return
	}
	if k.gcTimer != nil {
		k.gcTimer.Stop()
	}
	c.commitLocked()
	delete(c.members, id)
}
