package sim

import (
	"context"
	"errors"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// lineageStore is the offset store the workers use: the auditor's, with
// one lock per shard around each Fence and Commit, so that lineage sees
// each shard's accepted fences and commits in the order the store took
// them.
type lineageStore struct {
	offsets.Store
	l *lineage
}

func (s lineageStore) Fence(ctx context.Context, id shard.ID, token shard.Token) error {
	mu := s.l.shardLock(id)
	mu.Lock()
	defer mu.Unlock()
	err := s.Store.Fence(ctx, id, token)
	if err == nil || errors.Is(err, offsets.ErrStaleToken) {
		s.l.fence(id, token)
	}
	return err
}

func (s lineageStore) Commit(ctx context.Context, id shard.ID, token shard.Token, offset int64) error {
	mu := s.l.shardLock(id)
	mu.Lock()
	defer mu.Unlock()
	err := s.Store.Commit(ctx, id, token, offset)
	if err == nil {
		s.l.commit(id, token, offset)
	}
	return err
}

// closeWatch is the coordinator under every worker, which tells lineage
// of each lock released as closed: held by the releasing session just
// before the release, and free and marked shard.ReasonClosed just after.
type closeWatch struct {
	shard.Coordinator
	l *lineage
}

func (c closeWatch) Locks() shard.Locks { return closeLocks{c.Coordinator.Locks(), c.l} }

type closeLocks struct {
	shard.Locks
	l *lineage
}

func (k closeLocks) Release(ctx context.Context, id shard.SessionID, locks []shard.Lock, why shard.Reason) error {
	if why != shard.ReasonClosed {
		return k.Locks.Release(ctx, id, locks, why)
	}
	held := map[shard.Lock]shard.Token{}
	for _, lk := range locks {
		if key, err := k.Locks.Watch(ctx, lk, 0); err == nil && key.Session == id {
			held[lk] = key.Token
		}
	}
	err := k.Locks.Release(ctx, id, locks, why)
	if err != nil {
		return err
	}
	var claims []shard.Claim
	for lk, token := range held {
		key, err := k.Locks.Watch(ctx, lk, 0)
		s, ok := lk.Shard()
		if err == nil && ok && !key.Held() && key.Owner.Released == shard.ReasonClosed {
			claims = append(claims, shard.Claim{Shard: s, Token: token})
		}
	}
	k.l.releasedClosed(claims)
	return nil
}

// releaseWatch is a worker's coordinator as the worker calls it, which
// tells lineage of each release as closed that failed (the worker saw an
// error: a partition, its session ended meanwhile).
type releaseWatch struct {
	shard.Coordinator
	l      *lineage
	worker string
}

func (c releaseWatch) Locks() shard.Locks {
	return releaseLocks{c.Coordinator.Locks(), c.l, c.worker}
}

type releaseLocks struct {
	shard.Locks
	l      *lineage
	worker string
}

func (k releaseLocks) Release(ctx context.Context, id shard.SessionID, locks []shard.Lock, why shard.Reason) error {
	err := k.Locks.Release(ctx, id, locks, why)
	if err != nil && why == shard.ReasonClosed {
		var ids []shard.ID
		for _, lk := range locks {
			if s, ok := lk.Shard(); ok {
				ids = append(ids, s)
			}
		}
		k.l.releaseFailed(k.worker, ids, err)
	}
	return err
}
