package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// Watch is a blocking query on the whole fleet. It returns a consistent
// snapshot as soon as the index differs from after: at once when after is 0,
// when a write has happened since after, or when after is ahead of the index
// (a caller's index from another coordinator's history: returning lets
// shard.NextIndex see the reset, where Consul would wait out its timeout).
// Otherwise it blocks until the next write or until ctx ends, and then returns
// context.Cause(ctx).
//
// The index changes only when the snapshot does, so a watcher is never woken
// for nothing. Note that a lock-delay running out is not a write: a watcher
// is not woken by it, and a worker refused by lock-delay must retry on its
// own schedule.
func (f fleet) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	c := f.c
	return blockingRead(ctx, c, after, func() uint64 { return c.index }, c.snapshotLocked)
}

// blockingRead is the blocking query of every watch: it returns value() as
// soon as index() is above after, at once when after is 0, or when after
// is ahead of the store's index (a caller's index from another
// coordinator's history: returning lets shard.NextIndex see the reset,
// where Consul would wait out its timeout). Otherwise it waits for the
// next write and looks again, or returns context.Cause(ctx) once ctx ends.
// index and value are called with mu held, after the catch-up.
func blockingRead[K any](ctx context.Context, c *Coordinator, after uint64, index func() uint64, value func() K) (K, error) {
	var zero K
	for {
		if err := ctxErr(ctx); err != nil {
			return zero, err
		}
		c.mu.Lock()
		c.catchUpLocked()
		if after == 0 || index() > after || c.index < after {
			v := value()
			c.mu.Unlock()
			return v, nil
		}
		changed := c.changed
		c.mu.Unlock()

		select {
		case <-changed:
		case <-ctx.Done():
			return zero, context.Cause(ctx)
		}
	}
}

// snapshotLocked copies the store: the caller may keep and modify what it
// gets without touching the coordinator.
func (c *Coordinator) snapshotLocked() shard.Snapshot {
	snap := shard.Snapshot{
		Index:   c.index,
		Members: make([]shard.MemberState, 0, len(c.members)),
		Shards:  make([]shard.ShardState, 0, len(c.locks)),
	}
	if c.config != nil {
		cfg := *c.config
		snap.Config = &cfg
	}
	for id, k := range c.members {
		m := shard.MemberState{Member: k.member.Clone(), Session: k.session}
		c.fillReportsLocked(&m, id, k)
		snap.Members = append(snap.Members, m)
	}
	slices.SortFunc(snap.Members, func(a, b shard.MemberState) int { return cmp.Compare(a.ID, b.ID) })
	for lock, k := range c.locks {
		if id, ok := lock.Shard(); ok {
			snap.Shards = append(snap.Shards, shard.ShardState{Shard: id, Session: k.session, Token: k.token(), Owner: k.owner})
		}
	}
	slices.SortFunc(snap.Shards, func(a, b shard.ShardState) int { return cmp.Compare(a.Shard, b.Shard) })
	snap.Assignor, _ = c.lockKeyLocked(shard.AssignorLock)
	if c.freeze != nil {
		f := *c.freeze
		snap.Freeze = &f
	}
	if c.policy != nil {
		p := c.policy.Clone()
		snap.Policy = &p
	}
	snap.Assignments = make(map[string]shard.Assignment, len(c.assigns))
	for w, k := range c.assigns {
		a, problem := k.view()
		if problem != "" {
			snap.Problems = append(snap.Problems, fmt.Sprintf("assign/%s: %s", w, problem))
			continue
		}
		snap.Assignments[w] = a
	}
	slices.Sort(snap.Problems)
	return snap
}
