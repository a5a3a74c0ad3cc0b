package main

import (
	"context"
	"errors"
	"sync"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// auditor sits in front of the offsets store and checks, independently of
// it, the promise of fencing: once a token has been fenced or committed for
// a shard, no commit with a lower token is accepted. It holds its lock
// across the store's call so that what it sees is the order the store saw.
type auditor struct {
	offsets.Store
	mu            sync.Mutex
	floor         map[shard.ID]shard.Token
	accepted      int
	rejected      int // refused as stale: a superseded owner's late commit
	staleAccepted int // must stay 0
}

func newAuditor(s offsets.Store) *auditor {
	return &auditor{Store: s, floor: map[shard.ID]shard.Token{}}
}

func (a *auditor) Fence(ctx context.Context, s shard.ID, token shard.Token) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.Store.Fence(ctx, s, token)
	if err == nil {
		a.floor[s] = max(a.floor[s], token)
	}
	return err
}

func (a *auditor) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.Store.Commit(ctx, s, token, offset)
	switch {
	case err == nil:
		a.accepted++
		if token < a.floor[s] {
			a.staleAccepted++
		}
		a.floor[s] = max(a.floor[s], token)
	case errors.Is(err, offsets.ErrStaleToken):
		a.rejected++
	}
	return err
}

func (a *auditor) counts() (accepted, rejected, staleAccepted int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.accepted, a.rejected, a.staleAccepted
}
