package inproc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest/history"
	"github.com/shardlease/shardlease/shard"
)

// AuditOptions configure an Auditor. The zero value counts and keeps no
// history.
type AuditOptions struct {
	// History keeps every Fence and Commit for History. Off, the
	// Auditor's memory is bounded by the number of shards, as a run that
	// lasts until Ctrl-C needs.
	History bool
	// Effect, if set, is told of every commit before it reaches the store,
	// with the shard's lock held.
	Effect func(shard.Claim)
	// Violation, if set, is told of each problem as it is found, in words
	// that name the shard, the token and the values involved. Every
	// problem is also counted (AuditCounts).
	Violation func(string)
}

// AuditCounts are what an Auditor has seen so far. The first three count
// what happened; every other field counts a broken rule and must stay 0.
type AuditCounts struct {
	Commits       int64 // commits accepted
	StaleRejected int64 // commits refused with offsets.ErrStaleToken
	Fences        int64 // fences accepted

	StaleAccepted   int64 // commits accepted below a known floor
	Regressions     int64 // accepted offsets below the previous one
	LostCommits     int64 // owners that started below an offset accepted from an older owner
	FalseRejections int64 // commits refused as stale at or above the floor
	FenceBelowFloor int64 // fences accepted below the floor
	FenceRefused    int64 // fences refused as stale at or above the floor
	Unexpected      int64 // commits that failed with an error other than ErrStaleToken
}

// Op is one Fence or Commit as the Auditor saw it, in the form
// history.Check reads.
type Op = history.Op

// Auditor wraps an offsets.Store and checks every Fence and Commit against
// its own record of what the store accepted. Create it with NewAuditor; it
// is safe for concurrent use.
type Auditor struct {
	offsets.Store
	o AuditOptions

	seq atomic.Uint64

	mu     sync.Mutex
	shards map[shard.ID]*shardAudit
	ops    []Op

	commits, staleRejected, fences                           atomic.Int64
	staleAccepted, regressions, lostCommits, falseRejections atomic.Int64
	fenceBelowFloor, fenceRefused, unexpected                atomic.Int64
}

type shardAudit struct {
	mu        sync.Mutex
	floor     shard.Token // highest token fenced or accepted
	last      int64       // last accepted offset
	lastToken shard.Token // the token that wrote last
}

// NewAuditor returns an Auditor around s.
func NewAuditor(s offsets.Store, o AuditOptions) *Auditor {
	return &Auditor{Store: s, o: o, shards: map[shard.ID]*shardAudit{}}
}

func (a *Auditor) shard(s shard.ID) *shardAudit {
	a.mu.Lock()
	defer a.mu.Unlock()
	sa := a.shards[s]
	if sa == nil {
		sa = &shardAudit{}
		a.shards[s] = sa
	}
	return sa
}

// problem counts one broken rule and reports it.
func (a *Auditor) problem(n *atomic.Int64, format string, args ...any) {
	n.Add(1)
	if a.o.Violation != nil {
		a.o.Violation(fmt.Sprintf(format, args...))
	}
}

// record keeps op for History, unless its context had ended before it
// reached the store: such a call changed nothing and is no part of the
// store's history.
func (a *Auditor) record(op Op) {
	if !a.o.History {
		return
	}
	if op.Err != nil && !errors.Is(op.Err, offsets.ErrStaleToken) && (errors.Is(op.Err, context.Canceled) || errors.Is(op.Err, context.DeadlineExceeded)) {
		return
	}
	a.mu.Lock()
	a.ops = append(a.ops, op)
	a.mu.Unlock()
}

// Fence passes the fence to the store and checks the store's answer
// against the floor it has recorded for the shard.
func (a *Auditor) Fence(ctx context.Context, s shard.ID, token shard.Token) error {
	sa := a.shard(s)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	start := a.seq.Add(1)
	err := a.Store.Fence(ctx, s, token)
	a.record(Op{Shard: s, Fence: true, Token: token, Start: start, End: a.seq.Add(1), Err: err})
	switch {
	case err == nil:
		a.fences.Add(1)
		if token < sa.floor {
			a.problem(&a.fenceBelowFloor, "fence %s@%d accepted below the floor %d", s, token, sa.floor)
		}
		sa.floor = max(sa.floor, token)
	case errors.Is(err, offsets.ErrStaleToken):
		if token >= sa.floor {
			a.problem(&a.fenceRefused, "fence %s@%d refused as stale, but the floor is only %d: %v", s, token, sa.floor, err)
		}
	}
	return err
}

// Commit passes the commit to the store and checks the store's answer
// against the floor and the last offset it has recorded for the shard.
func (a *Auditor) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	sa := a.shard(s)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	if a.o.Effect != nil {
		a.o.Effect(shard.Claim{Shard: s, Token: token})
	}
	start := a.seq.Add(1)
	err := a.Store.Commit(ctx, s, token, offset)
	a.record(Op{Shard: s, Token: token, Offset: offset, Start: start, End: a.seq.Add(1), Err: err})
	switch {
	case err == nil:
		a.commits.Add(1)
		if token < sa.floor {
			a.problem(&a.staleAccepted, "stale commit accepted: %s@%d offset %d, after token %d was fenced or accepted", s, token, offset, sa.floor)
		}
		if offset < sa.last {
			a.problem(&a.regressions, "offset went backwards: %s@%d committed %d after %s@%d had committed %d", s, token, offset, s, sa.lastToken, sa.last)
		}
		sa.floor, sa.last, sa.lastToken = max(sa.floor, token), offset, token
	case errors.Is(err, offsets.ErrStaleToken):
		a.staleRejected.Add(1)
		if token >= sa.floor {
			a.problem(&a.falseRejections, "commit %s@%d offset %d refused as stale, but the floor is only %d: %v", s, token, offset, sa.floor, err)
		}
	default:
		a.problem(&a.unexpected, "commit %s@%d offset %d: unexpected error %v", s, token, offset, err)
	}
	return err
}

// Started checks a new owner's starting checkpoint: it must include every
// commit the store accepted from an older owner (a newer one may have
// committed since the claim was fenced; that is no loss).
func (a *Auditor) Started(c shard.Claim, start offsets.Checkpoint) {
	sa := a.shard(c.Shard)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	if start.Offset < sa.last && sa.lastToken <= c.Token {
		a.problem(&a.lostCommits, "lost commit: %v started from offset %d, but %s@%d had committed %d", c, start.Offset, c.Shard, sa.lastToken, sa.last)
	}
}

// Counts returns what the Auditor has seen so far.
func (a *Auditor) Counts() AuditCounts {
	return AuditCounts{
		Commits: a.commits.Load(), StaleRejected: a.staleRejected.Load(), Fences: a.fences.Load(),
		StaleAccepted: a.staleAccepted.Load(), Regressions: a.regressions.Load(), LostCommits: a.lostCommits.Load(),
		FalseRejections: a.falseRejections.Load(), FenceBelowFloor: a.fenceBelowFloor.Load(),
		FenceRefused: a.fenceRefused.Load(), Unexpected: a.unexpected.Load(),
	}
}

// History returns a copy of every Fence and Commit seen so far, in the
// order they were recorded; nil unless AuditOptions.History is set.
func (a *Auditor) History() []Op {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Op(nil), a.ops...)
}

func (a *Auditor) String() string {
	c := a.Counts()
	return fmt.Sprintf("%d commits accepted, %d stale commits rejected, %d fences", c.Commits, c.StaleRejected, c.Fences)
}
