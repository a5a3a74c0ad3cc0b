package worker

import (
	"context"
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// turns makes a shard's standby runs and handler runs on this worker take
// turns, across terms: each run waits until the one before it, of either
// kind, has returned. The loop ends a standby before it starts a runner
// (promote) and starts no standby beside a runner, but a run that ignores
// its context outlives the loop's bookkeeping, and its term; turns is
// what keeps the promise that Standby and Process never run at once for
// one shard, whatever either does.
type turns struct {
	mu   sync.Mutex
	last map[shard.ID]chan struct{} // closed when the shard's latest run returned
}

// turn is one run's place in its shard's line.
type turn struct {
	t          *turns
	id         shard.ID
	prev, mine chan struct{}
}

// join puts a run in shard id's line, behind every run already in it.
// The caller joins in the order the runs must go (the loop's), and the
// run calls wait before it starts and done when it returned.
func (t *turns) join(id shard.ID) *turn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[shard.ID]chan struct{}{}
	}
	tu := &turn{t: t, id: id, prev: t.last[id], mine: make(chan struct{})}
	t.last[id] = tu.mine
	return tu
}

// wait waits until the run ahead returned, or ctx ended (false: the run
// must not start).
func (tu *turn) wait(ctx context.Context) bool {
	if tu.prev == nil {
		return true
	}
	select {
	case <-tu.prev:
		return true
	case <-ctx.Done():
		return false
	}
}

// done lets the run behind go, once the run ahead has returned too (a
// run that never started must not let the next one pass the one before
// it).
func (tu *turn) done() {
	finish := func() {
		tu.t.mu.Lock()
		if tu.t.last[tu.id] == tu.mine {
			delete(tu.t.last, tu.id)
		}
		tu.t.mu.Unlock()
		close(tu.mine)
	}
	if tu.prev == nil {
		finish()
		return
	}
	select {
	case <-tu.prev:
		finish()
	default:
		go func() { <-tu.prev; finish() }()
	}
}
