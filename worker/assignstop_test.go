package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shardlease/shardlease/shard"
)

// assignHeld is a coordinator whose Assign, once armed, waits for its
// context to end and returns its error: an assignor write in flight when
// the worker stops.
type assignHeld struct {
	armed   atomic.Bool
	waiting atomic.Int32
}

func (c *assignHeld) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op == shard.OpAssign && c.armed.Load() {
		c.waiting.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	return invoke(ctx)
}

// TestStopDuringAssignIsQuiet: an assignor stopped while writing
// assignments stops without a warning: the write was cancelled by the
// stop, nothing failed. (A fleet test on Consul that fails on unexpected
// warnings caught "writing assignments failed" at a shutdown.)
func TestStopDuringAssignIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		core, logs := observer.New(zapcore.WarnLevel)
		cfg := f.config("a", nil)
		cfg.Handler = f.events.waiting("a")
		cfg.Logger = zap.New(core)
		held := &assignHeld{}
		f.startWrapped(cfg, func(c shard.Coordinator) shard.Coordinator { return shard.Intercept(c, held.intercept) })
		settle(10 * time.Second)
		held.armed.Store(true)
		f.start("b", nil) // a join: a's next step writes assignments
		for held.waiting.Load() == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		if err := f.stop("a"); err != nil {
			t.Fatalf("stopping a: %v", err)
		}
		for _, e := range logs.All() {
			if e.Message == "writing assignments failed; listing again" {
				t.Fatalf("a warned at its stop: %q %v", e.Message, e.Context)
			}
		}
	})
}
