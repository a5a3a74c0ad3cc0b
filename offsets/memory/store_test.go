package memory_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/offsets/offsetstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(testing.TB) offsets.Store { return memory.New() }

func TestConformance(t *testing.T) { offsetstest.Run(t, open) }

func BenchmarkStore(b *testing.B) { offsetstest.Benchmark(b, open) }

// A handler's context is cancelled with a cause (revoked, lost); the error
// must carry it so the handler can tell which.
func TestContextCause(t *testing.T) {
	lost := errors.New("lease lost")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(lost)
	err := memory.New().Commit(ctx, "stream/shard-000", 1, 1)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, lost) {
		t.Fatalf("err = %v, want context.Canceled and its cause", err)
	}
}
