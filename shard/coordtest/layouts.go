package coordtest

import (
	"context"
	"errors"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// layouts: SetLayouts needs a stored config and the layouts the change
// was decided from, and refuses a rewrite that does not follow them
// without a write. A reshard's config records protocol 4; a child may be
// locked only once opened, a parent only until one of its children is;
// once done, the parents' keys are neither problems nor lockable; a
// worker bringing the first shard set or the current one still joins.
func (s *suite) layouts(t *testing.T) {
	c := s.open(t)
	ctx := context.Background()
	split := shard.Layout{Shards: 8, Name: "stream/child", Lineage: shard.LineageMod, Started: shard.Mark{By: "test"}}
	if _, err := c.Fleet().SetLayouts(ctx, nil, []shard.Layout{split}); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("SetLayouts without a stored config = %v, want ErrInvalidArgument", err)
	}
	cfg := configure(t, c, 4)
	a := session(t, c, "w-a", long, 0)
	acquire(t, c, a, "stream/shard-000", "stream/shard-001")

	stored, err := c.Fleet().SetLayouts(ctx, nil, []shard.Layout{split})
	if err != nil || stored.Protocol != shard.ProtocolResharded || len(stored.Layouts) != 1 || !stored.Resharding() {
		t.Fatalf("starting a reshard = %+v, %v; want protocol 4 and the layout recorded", stored, err)
	}
	idx := snapshot(t, c).Index
	if _, err := c.Fleet().SetLayouts(ctx, nil, []shard.Layout{split}); !errors.Is(err, shard.ErrConfigChanged) {
		t.Fatalf("SetLayouts from layouts no longer stored = %v, want ErrConfigChanged", err)
	}
	renamed := split
	renamed.Name = "stream/other"
	if _, err := c.Fleet().SetLayouts(ctx, stored.Layouts, []shard.Layout{renamed}); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("SetLayouts renaming a recorded layout = %v, want ErrInvalidArgument", err)
	}
	noWrite(t, c, idx, quiet, "refused layout changes")

	// Nothing opened: children are not locked, parents are.
	got := acquire(t, c, a, "stream/child-000", "stream/shard-002")
	if _, ok := got["stream/child-000"]; ok || len(got) != 1 {
		t.Fatalf("Acquire of an unopened child and a parent = %v, want the parent alone", got)
	}
	// Parent 000 closes; its children (000 and 004 of 8) open.
	release(t, c, a, shard.ReasonClosed, "stream/shard-000")
	open := stored.Layouts[0]
	open.Opened = [][2]int{{0, 0}, {4, 4}}
	if stored, err = c.Fleet().SetLayouts(ctx, stored.Layouts, []shard.Layout{open}); err != nil {
		t.Fatalf("opening children: %v", err)
	}
	b := session(t, c, "w-b", long, 0)
	got = acquire(t, c, b, "stream/child-000", "stream/child-004", "stream/shard-000", "stream/child-001")
	if len(got) != 2 || got["stream/child-000"] == 0 || got["stream/child-004"] == 0 {
		t.Fatalf("Acquire after opening = %v, want the two open children alone (the closed parent and an unopened child refused)", got)
	}
	if snap := snapshot(t, c); len(snap.Problems) > 0 {
		t.Fatalf("problems during a reshard: %v", snap.Problems)
	}

	// Done: every child open, the parents retired.
	release(t, c, a, shard.ReasonClosed, "stream/shard-001", "stream/shard-002")
	done := open
	done.Opened, done.Done = nil, true
	if stored, err = c.Fleet().SetLayouts(ctx, stored.Layouts, []shard.Layout{done}); err != nil || stored.Resharding() {
		t.Fatalf("ending the reshard = %+v, %v", stored, err)
	}
	if _, err := c.Locks().Acquire(ctx, a, wantOf("stream/shard-003")); !errors.Is(err, shard.ErrUnknownShard) {
		t.Fatalf("Acquire of a retired parent = %v, want ErrUnknownShard", err)
	}
	snap := snapshot(t, c)
	if len(snap.Problems) > 0 || snap.Config == nil || len(snap.Config.IDs()) != 8 {
		t.Fatalf("after the reshard: problems %v, config %+v; want none, and the 8 children", snap.Problems, snap.Config)
	}
	for _, mine := range []shard.Config{cfg, {Shards: 8, Name: "stream/child"}} {
		if _, err := c.Fleet().Configure(ctx, mine); err != nil {
			t.Fatalf("a worker bringing %+v to the resharded fleet: %v", mine, err)
		}
	}
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 6}); !errors.Is(err, shard.ErrConfigMismatch) {
		t.Fatalf("a worker bringing another shard set = %v, want ErrConfigMismatch", err)
	}
}
