package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest"
	"github.com/shardlease/shardlease/shard"
)

// auditor wraps the offset store and checks every Fence and Commit against
// its own record of what the store accepted. Operations on one shard are
// serialized by a per-shard mutex held across the inner call, so the record
// follows the store's order for that shard exactly. Every operation is also
// kept, with positions in one global sequence, for offsetstest.CheckHistory
// at the end of the run.
type auditor struct {
	offsets.Store
	c *checker
	// effect, if set, is told of every commit before it reaches the store.
	effect func(shard.Claim)

	seq atomic.Uint64

	mu     sync.Mutex
	shards map[shard.ID]*shardAudit
	ops    []offsetstest.Op

	commits, stale, fences atomic.Int64
}

type shardAudit struct {
	mu        sync.Mutex
	floor     shard.Token // highest token fenced or accepted
	last      int64       // last accepted offset
	lastToken shard.Token // the token that wrote last
}

func newAuditor(s offsets.Store, c *checker) *auditor {
	return &auditor{Store: s, c: c, shards: map[shard.ID]*shardAudit{}}
}

func (a *auditor) shard(s shard.ID) *shardAudit {
	a.mu.Lock()
	defer a.mu.Unlock()
	sa := a.shards[s]
	if sa == nil {
		sa = &shardAudit{}
		a.shards[s] = sa
	}
	return sa
}

// record keeps op for the history check, unless its context had ended
// before it reached the store (the memory store checks that first): such a
// call changed nothing and is no part of the store's history.
func (a *auditor) record(op offsetstest.Op) {
	if op.Err != nil && !errors.Is(op.Err, offsets.ErrStaleToken) && (errors.Is(op.Err, context.Canceled) || errors.Is(op.Err, context.DeadlineExceeded)) {
		return
	}
	a.mu.Lock()
	a.ops = append(a.ops, op)
	a.mu.Unlock()
}

func (a *auditor) Fence(ctx context.Context, s shard.ID, token shard.Token) error {
	sa := a.shard(s)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	start := a.seq.Add(1)
	err := a.Store.Fence(ctx, s, token)
	a.record(offsetstest.Op{Shard: s, Fence: true, Token: token, Start: start, End: a.seq.Add(1), Err: err})
	switch {
	case err == nil:
		a.fences.Add(1)
		if token < sa.floor {
			a.c.violate("fence %s@%d accepted below the floor %d", s, token, sa.floor)
		}
		sa.floor = max(sa.floor, token)
	case errors.Is(err, offsets.ErrStaleToken):
		if token >= sa.floor {
			a.c.violate("fence %s@%d refused as stale, but the floor is only %d: %v", s, token, sa.floor, err)
		}
	}
	return err
}

func (a *auditor) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	sa := a.shard(s)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	if a.effect != nil {
		a.effect(shard.Claim{Shard: s, Token: token})
	}
	start := a.seq.Add(1)
	err := a.Store.Commit(ctx, s, token, offset)
	a.record(offsetstest.Op{Shard: s, Token: token, Offset: offset, Start: start, End: a.seq.Add(1), Err: err})
	switch {
	case err == nil:
		a.commits.Add(1)
		if token < sa.floor {
			a.c.violate("stale commit accepted: %s@%d offset %d, after token %d was fenced or accepted", s, token, offset, sa.floor)
		}
		if offset < sa.last {
			a.c.violate("offset went backwards: %s@%d committed %d after %s@%d had committed %d", s, token, offset, s, sa.lastToken, sa.last)
		}
		sa.floor, sa.last, sa.lastToken = max(sa.floor, token), offset, token
	case errors.Is(err, offsets.ErrStaleToken):
		a.stale.Add(1)
		if token >= sa.floor {
			a.c.violate("commit %s@%d offset %d refused as stale, but the floor is only %d: %v", s, token, offset, sa.floor, err)
		}
	default:
		a.c.violate("commit %s@%d offset %d: unexpected error %v", s, token, offset, err)
	}
	return err
}

// started checks a new owner's starting checkpoint: it must include every
// commit the store accepted from an older owner.
func (a *auditor) started(c shard.Claim, start offsets.Checkpoint) {
	sa := a.shard(c.Shard)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	if start.Offset < sa.last && sa.lastToken <= c.Token {
		a.c.violate("lost commit: %v started from offset %d, but %s@%d had committed %d", c, start.Offset, c.Shard, sa.lastToken, sa.last)
	}
}

// final checks the whole history against the store's final checkpoints.
func (a *auditor) final(ctx context.Context) {
	a.mu.Lock()
	ops := append([]offsetstest.Op(nil), a.ops...)
	ids := make([]shard.ID, 0, len(a.shards))
	for id := range a.shards {
		ids = append(ids, id)
	}
	a.mu.Unlock()
	final := map[shard.ID]offsets.Checkpoint{}
	for _, id := range ids {
		cp, err := a.Store.Load(ctx, id)
		if err != nil {
			a.c.violate("loading %s at the end: %v", id, err)
			continue
		}
		final[id] = cp
	}
	for _, p := range offsetstest.CheckHistory(ops, final) {
		a.c.violate("history: %s", p)
	}
}

func (a *auditor) String() string {
	return fmt.Sprintf("%d commits accepted, %d stale commits rejected, %d fences", a.commits.Load(), a.stale.Load(), a.fences.Load())
}
