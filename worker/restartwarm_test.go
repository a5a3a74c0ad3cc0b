package worker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// failingLoads is an offsets store whose Load fails once fail is set.
type failingLoads struct {
	offsets.Store
	fail *atomic.Bool
}

func (s failingLoads) Load(ctx context.Context, id shard.ID) (offsets.Checkpoint, error) {
	if s.fail.Load() {
		return offsets.Checkpoint{}, errors.New("load refused by the test")
	}
	return s.Store.Load(ctx, id)
}

// restartRecorder fails each shard's first Process call on a warm claim
// and records whether each call came warm.
type restartRecorder struct {
	*warmHandler
	failLoads *atomic.Bool
	mu        sync.Mutex
	calls     map[shard.ID][]bool // per call: c.Warm != nil
}

func (h *restartRecorder) Process(ctx context.Context, c *worker.Claim) error {
	h.mu.Lock()
	h.calls[c.Shard] = append(h.calls[c.Shard], c.Warm != nil)
	first := len(h.calls[c.Shard]) == 1
	h.mu.Unlock()
	if first && c.Warm != nil {
		h.failLoads.Store(true) // the restart's Load fails: it must not reuse this claim's Warm
		return errors.New("handler bug on the first call")
	}
	return h.warmHandler.Process(ctx, c)
}

// TestRestartedHandlerIsNotWarm: a handler started warm that returns while
// it owns the shard is restarted cold (Claim.Warm nil), even when the
// restart cannot load the committed offset and reuses the first claim.
func TestRestartedHandlerIsNotWarm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 4)
		f.start("a", newWarmHandler(time.Second))
		settle(30 * time.Second)
		var fail atomic.Bool
		h := &restartRecorder{warmHandler: newWarmHandler(time.Second), failLoads: &fail, calls: map[shard.ID][]bool{}}
		cfg := f.config("b", h)
		cfg.Offsets = failingLoads{Store: f.store, fail: &fail}
		f.startWith(cfg)
		settle(30 * time.Second)
		h.mu.Lock()
		defer h.mu.Unlock()
		restarted := 0
		for id, calls := range h.calls {
			if len(calls) < 2 || !calls[0] {
				continue
			}
			restarted++
			for i, warm := range calls[1:] {
				if warm {
					t.Errorf("%s's call %d after a warm first call that failed came warm", id, i+2)
				}
			}
		}
		if restarted == 0 {
			t.Fatalf("no shard started warm on b and was restarted: %v", h.calls)
		}
	})
}
