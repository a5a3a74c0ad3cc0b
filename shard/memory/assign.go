package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// MaxTxnAssignments is how many assignment keys one transaction of Assign
// writes. Consul's cap of 128 operations would allow 126 (two go to the
// checks on P/assignor); the embedded coordinator writes fewer per
// transaction so that unit tests exercise Assign's batches at small fleet
// sizes.
const MaxTxnAssignments = 64

// assignKey is P/assign/<worker>: what reading its value gives (decoded
// once, when written).
type assignKey struct {
	assignment shard.Assignment
	problem    string
	index      uint64
}

// assignments is the coordinator's shard.Assignments.
type assignments struct{ c *Coordinator }

// Assignments returns the coordinator's assignment keys.
func (c *Coordinator) Assignments() shard.Assignments { return assignments{c} }

// Assign writes or deletes the assignment keys of set, in sorted worker
// order, MaxTxnAssignments per transaction; each transaction first checks
// that the session holds P/assignor at epoch, and is one write (a batch
// that changes nothing, deleting only missing keys, is none). A failed
// check wraps shard.ErrNotAssignor and names the holder; here every call
// is atomic, so a call is refused before its first transaction or not at
// all. Values are encoded as Consul stores them (shard.Config's
// EncodeAssignment), so the same shards are refused: a shard outside the
// config wraps shard.ErrUnknownShard, before anything is written.
func (as assignments) Assign(ctx context.Context, id shard.SessionID, epoch shard.Token, set map[string]*shard.Assignment) error {
	c := as.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	workers := slices.Sorted(maps.Keys(set))
	if len(workers) > 0 && workers[0] == "" {
		return fmt.Errorf("%w: assign: worker id is empty", shard.ErrInvalidArgument)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if len(workers) == 0 {
		return nil
	}
	if c.config == nil {
		return fmt.Errorf("%w: assign: the fleet has no config yet (Configure first)", shard.ErrInvalidArgument)
	}
	keys := make(map[string]*assignKey, len(set))
	for _, w := range workers {
		if set[w] == nil {
			continue
		}
		a := *set[w]
		a.Epoch = epoch
		value, err := c.config.EncodeAssignment(a)
		if err != nil {
			return fmt.Errorf("assign: worker %q: %w", w, err)
		}
		keys[w] = c.decodeAssignmentLocked(value)
	}

	written := 0
	for batch := range slices.Chunk(workers, MaxTxnAssignments) {
		if err := c.checkAssignorLocked(id, epoch); err != nil {
			return fmt.Errorf("%w (%d of %d assignment keys were written before this transaction)", err, written, len(workers))
		}
		changes := slices.ContainsFunc(batch, func(w string) bool { return keys[w] != nil || c.assigns[w] != nil })
		if !changes {
			continue
		}
		idx := c.commitLocked()
		for _, w := range batch {
			switch k := keys[w]; {
			case k != nil:
				k.index = idx
				c.assigns[w] = k
			case c.assigns[w] != nil:
				delete(c.assigns, w)
				c.assignGone[w] = idx
			}
		}
		written += len(batch)
	}
	return nil
}

// checkAssignorLocked is the check every Assign transaction starts with:
// Consul's check-session and check-index on P/assignor.
func (c *Coordinator) checkAssignorLocked(id shard.SessionID, epoch shard.Token) error {
	k := c.locks[shard.AssignorLock]
	if k != nil && k.session == id && shard.Token(k.index) == epoch {
		return nil
	}
	var now string
	switch {
	case k == nil:
		now = "it is missing"
	case k.session == "":
		now = "it is free"
	case k.session == id:
		now = fmt.Sprintf("this session holds it at epoch %d", k.index)
	default:
		now = fmt.Sprintf("session %q (worker %q) holds it at epoch %d", k.session, k.owner.Worker, k.index)
	}
	return fmt.Errorf("%w: session %q does not hold P/assignor at epoch %d: %s", shard.ErrNotAssignor, id, epoch, now)
}

// Watch is a blocking query on P/assign/<worker>: it returns the
// key as soon as its index is above after (at once when after is 0, or
// when after is ahead of the store's index, so that shard.NextIndex sees
// the reset). A missing key's index is that of the write that deleted it,
// so its deletion wakes the watcher once; other keys' writes never do,
// whether the key exists or not (unlike Consul for a missing key).
func (as assignments) Watch(ctx context.Context, worker string, after uint64) (shard.AssignmentKey, error) {
	c := as.c
	if worker == "" {
		return shard.AssignmentKey{}, fmt.Errorf("%w: assignment worker id is empty", shard.ErrInvalidArgument)
	}
	index := func() uint64 {
		if k := c.assigns[worker]; k != nil {
			return k.index
		}
		return max(c.assignGone[worker], 1)
	}
	return blockingRead(ctx, c, after, index, func() shard.AssignmentKey {
		k := c.assigns[worker]
		if k == nil {
			return shard.AssignmentKey{Index: index()}
		}
		return shard.AssignmentKey{Index: k.index, Exists: true, Assignment: cloneAssignment(k.assignment), Problem: k.problem}
	})
}

// decodeAssignmentLocked reads a stored value as Watch and
// snapshots show it.
func (c *Coordinator) decodeAssignmentLocked(value []byte) *assignKey {
	k := &assignKey{}
	if c.config == nil {
		k.problem = "the fleet has no config to read the assignment against"
		return k
	}
	a, err := c.config.DecodeAssignment(value)
	if err != nil {
		k.problem = err.Error()
		return k
	}
	k.assignment = a
	return k
}

// DeleteAssignor deletes P/assignor, as an operator might in Consul, and
// reports whether it existed. A session that held it simply no longer
// does; a pending lock-delay remains. The next holder's epoch is still
// higher: its write comes after the delete.
func (c *Coordinator) DeleteAssignor() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()
	return c.deleteLockLocked(shard.AssignorLock)
}

// DeleteAssignment deletes P/assign/<worker>, as an operator's
// `consul kv delete` would, and reports whether it existed. Its watcher
// wakes once, at the delete's index, and sees the key missing.
func (c *Coordinator) DeleteAssignment(worker string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if c.assigns[worker] == nil {
		return false
	}
	c.assignGone[worker] = c.commitLocked()
	delete(c.assigns, worker)
	return true
}

// PutAssignmentValue writes value to P/assign/<worker> as a plain put by an
// operator would, creating the key if it is missing. A value that cannot
// be read as an assignment shows as a problem, in snapshots and to
// Assignments.Watch.
func (c *Coordinator) PutAssignmentValue(worker string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	k := c.decodeAssignmentLocked(value)
	k.index = c.commitLocked()
	c.assigns[worker] = k
}

func cloneAssignment(a shard.Assignment) shard.Assignment {
	a.Shards = slices.Clone(a.Shards)
	a.Free = slices.Clone(a.Free)
	a.Why = maps.Clone(a.Why)
	return a
}
