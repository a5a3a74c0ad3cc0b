package admin_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

// reshardRule: Reshard and CancelReshard refuse what they must, naming
// it, and write nothing then; a reshard started after a cancelled one
// waits until the shards that one closed have run again; a cancel once a
// child is open is refused.
func reshardRule(t *testing.T, e *env) {
	ctx := t.Context()
	ids := e.configure(4)
	sid := e.join("w1", ids...)
	if _, err := e.op.Reshard(ctx, admin.ReshardPlan{Shards: 8}); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("a reshard without By = %v, want ErrInvalidArgument", err)
	}
	e.op.By = "ops"
	before := e.snapshot().Index
	refused(t, "a reshard to the same count", func() error { _, err := e.op.Reshard(ctx, admin.ReshardPlan{Shards: 4}); return err }(),
		shard.ErrInvalidArgument, "has 4 shards already")
	refused(t, "a cancel with none running", func() error { _, err := e.op.CancelReshard(ctx, ""); return err }(),
		admin.ErrResharding, "not resharding")
	e.unchanged(before, "refused reshards")

	cfg, err := e.op.Reshard(ctx, admin.ReshardPlan{Shards: 8, Reason: "traffic"})
	if err != nil || !cfg.Resharding() || cfg.Layouts[0].Name != "stream/shard.r1" || cfg.Layouts[0].Started.By != "ops" {
		t.Fatalf("reshard = %+v, %v; want stream/shard.r1 started by ops", cfg, err)
	}
	refused(t, "a second reshard", func() error { _, err := e.op.Reshard(ctx, admin.ReshardPlan{Shards: 16}); return err }(),
		admin.ErrResharding, "already resharding to 8")

	// Parent 000 closes, then the reshard is cancelled before any child
	// opened: 000 has not run since, so another reshard must wait.
	if err := e.coord.Locks().Release(ctx, sid, []shard.Lock{shard.ShardLock(ids[0])}, shard.ReasonClosed); err != nil {
		t.Fatal(err)
	}
	if cfg, err = e.op.CancelReshard(ctx, "wrong count"); err != nil || cfg.Resharding() || cfg.Protocol != shard.Protocol {
		t.Fatalf("cancel = %+v, %v; want no reshard, protocol %d", cfg, err, shard.Protocol)
	}
	refused(t, "a reshard while a shard closed by the cancelled one has not run again", func() error {
		_, err := e.op.Reshard(ctx, admin.ReshardPlan{Shards: 8})
		return err
	}(), admin.ErrResharding, "closed by a cancelled reshard")
	e.acquire("w1", ids[0])
	if cfg, err = e.op.Reshard(ctx, admin.ReshardPlan{Shards: 8}); err != nil || cfg.Layouts[1].Name != "stream/shard.r2" {
		t.Fatalf("a reshard once it ran again = %+v, %v; want stream/shard.r2 (the cancelled layout's name is not reused)", cfg, err)
	}

	// A child opened: too late to cancel.
	snap := e.snapshot()
	if _, err := e.coord.Fleet().SetLayouts(ctx, snap.Config.Layouts, snap.Config.Opening([]shard.ID{"stream/shard.r2-001"})); err != nil {
		t.Fatal(err)
	}
	refused(t, "a cancel once a child opened", func() error { _, err := e.op.CancelReshard(ctx, ""); return err }(),
		admin.ErrChildOpen, "1 of the 8 children are open")

	// Done: the parents' keys are retired, and a free one can be deleted.
	snap = e.snapshot()
	if _, err := e.coord.Fleet().SetLayouts(ctx, snap.Config.Layouts, snap.Config.Ending()); err != nil {
		t.Fatal(err)
	}
	if err := e.coord.Locks().Release(ctx, sid, []shard.Lock{shard.ShardLock(ids[1])}, shard.ReasonClosed); err != nil {
		t.Fatal(err)
	}
	if e.keys != nil {
		if d, err := e.op.DeleteShard(ctx, e.keys, ids[1]); err != nil || !strings.Contains(d.Problem, "no longer runs") {
			t.Fatalf("deleting a retired parent's key = %+v, %v", d, err)
		}
	}
}
