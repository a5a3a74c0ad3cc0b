package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

// MaxTxnAssignments is how many workers' assignments one transaction of Assign
// writes. Consul's cap of 128 operations would allow 126 (two go to the
// checks on P/assignor); the embedded coordinator writes fewer per
// transaction so that unit tests exercise Assign's batches at small fleet
// sizes.
const MaxTxnAssignments = 64

// assignKey is a worker's two assignment keys, P/assign/<worker>/shards
// (what reading its value gives, decoded once, when written) and
// P/assign/<worker>/memory (the assignor's opaque memory), with each one's
// modify index: the pair is sealed when one write wrote both (see
// shard.Unsealed). A key that is missing has index 0.
type assignKey struct {
	assignment  shard.Assignment
	problem     string
	index       uint64
	memory      []byte
	memoryIndex uint64
}

// sealed reports whether one write wrote the value and the memory.
func (k *assignKey) sealed() bool { return k.index != 0 && k.index == k.memoryIndex }

// view is the key as Assignments.Watch and snapshots read it: its value
// with the memory when sealed, else the problem.
func (k *assignKey) view() (shard.Assignment, string) {
	switch {
	case k.problem != "":
		return shard.Assignment{}, k.problem
	case !k.sealed():
		return shard.Assignment{}, shard.Unsealed
	}
	a := k.assignment.Clone()
	a.Memory = slices.Clone(k.memory)
	return a, ""
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
// all. Values are encoded as Consul stores them
// (keycodec.EncodeAssignment), so the same shards are refused: a shard outside the
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
		value, err := keycodec.EncodeAssignment(*c.config, a)
		if err != nil {
			return fmt.Errorf("assign: worker %q: %w", w, err)
		}
		k := c.decodeAssignmentLocked(value)
		k.memory = slices.Clone(a.Memory)
		keys[w] = k
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
				k.index, k.memoryIndex = idx, idx
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
	if k != nil && k.session == id && k.token() == epoch {
		return nil
	}
	var now string
	switch {
	case k == nil:
		now = "it is missing"
	case k.session == "":
		now = "it is free"
	case k.session == id:
		now = fmt.Sprintf("this session holds it at epoch %d", k.token())
	default:
		now = fmt.Sprintf("session %q (worker %q) holds it at epoch %d", k.session, k.owner.Worker, k.token())
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
	index := func() uint64 { // the worker's key's: its memory alone does not wake it
		if k := c.assigns[worker]; k != nil && k.index != 0 {
			return k.index
		}
		return max(c.assignGone[worker], 1)
	}
	return blockingRead(ctx, c, after, index, func() shard.AssignmentKey {
		k := c.assigns[worker]
		if k == nil || k.index == 0 {
			return shard.AssignmentKey{Index: index()}
		}
		a, problem := k.view()
		a.Memory = nil // the assignor's, not the worker's
		return shard.AssignmentKey{Index: k.index, Exists: true, Assignment: a, Problem: problem}
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
	a, err := keycodec.DecodeAssignment(*c.config, value)
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

// PutAssignmentValue writes value to P/assign/<worker>/shards as a plain
// put by an operator would, creating the key if it is missing, and leaves
// the assignor's memory beside it alone. The pair is no longer sealed, so
// snapshots and Assignments.Watch show a problem (shard.Unsealed, or why
// the value cannot be read) instead of the value.
func (c *Coordinator) PutAssignmentValue(worker string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	k := c.decodeAssignmentLocked(value)
	if old := c.assigns[worker]; old != nil {
		k.memory, k.memoryIndex = old.memory, old.memoryIndex
	}
	k.index = c.commitLocked()
	c.assigns[worker] = k
}

// PutAssignmentMemory writes memory to P/assign/<worker>/memory as a
// plain put would, leaving the worker's key alone: the pair is no longer
// sealed. It does nothing when the worker has no key.
func (c *Coordinator) PutAssignmentMemory(worker string, memory []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if k := c.assigns[worker]; k != nil {
		k.memory, k.memoryIndex = slices.Clone(memory), c.commitLocked()
	}
}
