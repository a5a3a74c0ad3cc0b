package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// sharedCoordinator is the embedded coordinator saying it is shared
// between processes, as shard/consul does.
type sharedCoordinator struct{ shard.Coordinator }

func (sharedCoordinator) SharedBetweenProcesses() bool { return true }

// TestLocalOffsetsBesideASharedCoordinator: a store only this process sees
// beside a coordinator processes share is refused, naming both and what to
// do, unless LocalOffsets says the fleet runs in one process; beside the
// embedded coordinator it is what it always was.
func TestLocalOffsetsBesideASharedCoordinator(t *testing.T) {
	handler := worker.HandlerFunc(func(ctx context.Context, _ *worker.Claim) error { <-ctx.Done(); return nil })
	cfg := worker.Config{ID: "w1", Fleet: shard.Config{Shards: 4}, Coordinator: sharedCoordinator{memory.New()}, Offsets: offmem.New(), Handler: handler}
	var _ offsets.Local = offmem.New()
	_, err := worker.New(cfg)
	if !errors.Is(err, worker.ErrInvalidConfig) || !strings.Contains(err.Error(), "keeps offsets in this process only") ||
		!strings.Contains(err.Error(), "offsets/postgres") || !strings.Contains(err.Error(), "LocalOffsets") {
		t.Errorf("a local store beside a shared coordinator: %v", err)
	}
	cfg.LocalOffsets = true
	if _, err := worker.New(cfg); err != nil {
		t.Errorf("with LocalOffsets: %v", err)
	}
	cfg.LocalOffsets, cfg.Coordinator = false, memory.New()
	if _, err := worker.New(cfg); err != nil {
		t.Errorf("beside the embedded coordinator: %v", err)
	}
}
