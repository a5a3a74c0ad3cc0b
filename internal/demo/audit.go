package demo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// audited wraps the real store and keeps its own record of what the store
// accepted. Operations on one shard are serialized by a per-shard mutex held
// across the inner call, so the record follows the store's own order for
// that shard exactly; different shards still proceed in parallel.
type audited struct {
	offsets.Store

	mu     sync.Mutex
	shards map[shard.ID]*shardAudit

	committed      atomic.Int64 // accepted commits
	staleRejected  atomic.Int64 // commits refused with ErrStaleToken
	staleAccepted  atomic.Int64 // commits accepted below a known floor: must stay 0
	regressions    atomic.Int64 // accepted offsets below the previous one: must stay 0
	lostCommits    atomic.Int64 // owners that started below the last accepted offset: must stay 0
	falseRejection atomic.Int64 // valid commits refused: must stay 0
}

type shardAudit struct {
	mu    sync.Mutex
	floor shard.Token // highest token fenced or accepted
	last  int64       // last accepted offset
}

func audit(s offsets.Store) *audited { return &audited{Store: s, shards: map[shard.ID]*shardAudit{}} }

func (a *audited) shard(s shard.ID) *shardAudit {
	a.mu.Lock()
	defer a.mu.Unlock()
	sa := a.shards[s]
	if sa == nil {
		sa = &shardAudit{}
		a.shards[s] = sa
	}
	return sa
}

func (a *audited) Fence(ctx context.Context, s shard.ID, token shard.Token) error {
	sa := a.shard(s)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	err := a.Store.Fence(ctx, s, token)
	if err == nil {
		sa.floor = max(sa.floor, token)
	}
	return err
}

func (a *audited) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	sa := a.shard(s)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	err := a.Store.Commit(ctx, s, token, offset)
	switch {
	case err == nil:
		a.committed.Add(1)
		if token < sa.floor {
			a.staleAccepted.Add(1)
		}
		if offset < sa.last {
			a.regressions.Add(1)
		}
		sa.floor, sa.last = max(sa.floor, token), offset
	case errors.Is(err, offsets.ErrStaleToken):
		a.staleRejected.Add(1)
		if token >= sa.floor {
			a.falseRejection.Add(1)
		}
	}
	return err
}

// started records that a new owner began from start; it must not be below
// the last offset the store accepted for the shard.
func (a *audited) started(s shard.ID, start int64) {
	sa := a.shard(s)
	sa.mu.Lock()
	defer sa.mu.Unlock()
	if start < sa.last {
		a.lostCommits.Add(1)
	}
}
