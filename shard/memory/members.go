package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// members is the coordinator's shard.Members.
type members struct{ c *Coordinator }

// Members returns the coordinator's member registry.
func (c *Coordinator) Members() shard.Members { return members{c} }

// Join registers m under its ID with the session, in one write: it takes the
// member key if it is missing or dead (held by no session), or updates its
// value if this session already holds it. m.Load is not written: loads
// have a key of their own (ReportLoad). An empty ID wraps
// shard.ErrInvalidArgument; a key held by another session wraps
// shard.ErrMemberExists and names the ID; a gone session wraps
// shard.ErrSessionInvalid.
//
// Unlike Consul, member keys get no lock-delay when their session is
// invalidated, so a crashed worker that restarts under the same ID can join
// again as soon as its old session is gone.
func (ms members) Join(ctx context.Context, id shard.SessionID, m shard.Member) error {
	c := ms.c
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
	m.Load, m.Standby = nil, nil
	c.members[m.ID] = &memberKey{member: m.Clone(), session: id, index: idx}
	return nil
}

// collectMemberLocked deletes a dead member key whose grace has passed, and
// its worker's report keys, in one write. Dead members are ignored by the planner at once; deleting them only
// keeps snapshots from growing with every worker that ever lived.
func (c *Coordinator) collectMemberLocked(id string) {
	k := c.members[id]
	if k == nil || k.session != "" {
		return
	}
	if k.gcTimer != nil {
		k.gcTimer.Stop()
	}
	c.memberGone[id] = c.commitLocked()
	delete(c.members, id)
	c.deleteReportsLocked(id, false)
}

// Watch is a blocking query on one member key: it returns the key as
// soon as its index is above after (at once when after is 0, or when after
// is ahead of the store's index, so that shard.NextIndex sees the reset).
// A missing key's index is that of the write that deleted it, so its
// deletion wakes the watcher once; other keys' writes never do.
func (ms members) Watch(ctx context.Context, id string, after uint64) (shard.MemberKey, error) {
	c := ms.c
	if id == "" {
		return shard.MemberKey{}, fmt.Errorf("%w: member id is empty", shard.ErrInvalidArgument)
	}
	key := func() shard.MemberKey { return c.memberKeyLocked(id) }
	return blockingRead(ctx, c, after, func() uint64 { return key().Index }, key)
}

func (c *Coordinator) memberKeyLocked(id string) shard.MemberKey {
	k, ok := c.members[id]
	if !ok {
		return shard.MemberKey{Index: max(c.memberGone[id], 1)}
	}
	return shard.MemberKey{Index: k.index, Exists: true, Member: shard.MemberState{Member: k.member.Clone(), Session: k.session}}
}

// DeleteMember deletes a member key, as an operator might in Consul, and
// reports whether it existed. A live worker notices through its member watch and
// joins again. Its report keys go too unless a live session holds it (in
// Consul the collector deletes such an orphan at the next watch).
func (c *Coordinator) DeleteMember(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	k, ok := c.members[id]
	if !ok {
		return false
	}
	if k.gcTimer != nil {
		k.gcTimer.Stop()
	}
	c.memberGone[id] = c.commitLocked()
	delete(c.members, id)
	c.deleteReportsLocked(id, true)
	return true
}

// PutMember overwrites a member key's value and keeps its session, as a
// plain PUT does in Consul (an operator's edit). It creates the key without
// a session when it is missing.
func (c *Coordinator) PutMember(m shard.Member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	k := c.members[m.ID]
	if k == nil {
		k = &memberKey{deadSince: c.clock.Now()}
		k.gcTimer = c.scheduleLocked(c.collectAt(k))
		c.members[m.ID] = k
	}
	k.member, k.index = m.Clone(), c.commitLocked()
}

// collectAt is when dead member key k is deleted: the member grace after
// its session ended, or the end of the rejoin grace its worker wrote when
// it stopped, whichever is later, so that the assignor still sees a
// returning worker's key.
func (c *Coordinator) collectAt(k *memberKey) time.Time {
	at := k.deadSince.Add(c.memberGrace)
	if k.member.RejoinUntil.After(at) {
		return k.member.RejoinUntil
	}
	return at
}
