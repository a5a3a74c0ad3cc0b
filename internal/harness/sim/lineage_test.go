package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
)

// family is a hand-made history of one reshard for the lineage checker:
// stream/shard-000 and -001 split into s2-000 … s2-003 (lineage mod, so
// shard-000's children are s2-000 and s2-002); the stored config, the
// claims the coordinator granted and the offset store are the test's.
type family struct {
	t       *testing.T
	c       *checker
	l       *lineage
	store   offsets.Store
	cfg     shard.Config
	granted map[shard.Claim]bool
}

const (
	parent0 = shard.ID("stream/shard-000")
	child0  = shard.ID("s2-000")
	child2  = shard.ID("s2-002")
)

func newFamily(t *testing.T, inner offsets.Store) *family {
	f := &family{t: t, c: &checker{start: time.Now()}, granted: map[shard.Claim]bool{},
		cfg: shard.Config{Shards: 2, Layouts: []shard.Layout{{Shards: 4, Name: "s2", Lineage: shard.LineageMod}}}}
	f.l = newLineage(f.c, func() shard.Config { return f.cfg }, func(c shard.Claim) bool { return f.granted[c] })
	f.store = lineageStore{inner, f.l}
	return f
}

// grant is a claim the coordinator granted.
func (f *family) grant(s shard.ID, token shard.Token) shard.Claim {
	c := shard.Claim{Shard: s, Token: token}
	f.granted[c] = true
	return c
}

// owner fences and commits offset for its claim, as a parent's handler does.
func (f *family) owner(c shard.Claim, offset int64) {
	ctx := context.Background()
	_ = f.store.Fence(ctx, c.Shard, c.Token)
	if err := f.store.Commit(ctx, c.Shard, c.Token, offset); err != nil {
		f.t.Fatalf("commit of %v: %v", c, err)
	}
	f.l.start("w0", c, offsets.Checkpoint{}, nil)
}

// close commits offset as c's end and records the close and its release.
func (f *family) close(c shard.Claim, offset int64) {
	if err := f.store.Commit(context.Background(), c.Shard, c.Token, offset); err != nil {
		f.t.Fatalf("close of %v: %v", c, err)
	}
	f.l.closed(c, offset)
	f.l.releasedClosed([]shard.Claim{c})
}

// child runs a child's claim as the worker does: fence its own shard
// and its parent shard-000 with its token, load the parent's checkpoint
// (unless parents is given), start its handler.
func (f *family) child(c shard.Claim, parents map[shard.ID]offsets.Checkpoint) {
	ctx := context.Background()
	_ = f.store.Fence(ctx, c.Shard, c.Token)
	_ = f.store.Fence(ctx, parent0, c.Token)
	if parents == nil {
		cp, _ := f.store.Load(ctx, parent0)
		parents = map[shard.ID]offsets.Checkpoint{parent0: cp}
	}
	own, _ := f.store.Load(ctx, c.Shard)
	f.l.start("w1", c, own, parents)
}

// TestLineageCatchesAChildBeforeItsParentClosed: the reshard checks must
// see what they exist to see, and nothing else. Each case plays a
// history of parent shard-000 and its children and lists the violations
// it must report (none: it must pass), and how many closed parents run
// again it must count.
func TestLineageCatchesAChildBeforeItsParentClosed(t *testing.T) {
	tests := []struct {
		name     string
		careless bool // a store without a fence
		play     func(f *family)
		want     []string // what the one violation says (nil: none)
		reopens  int64
	}{
		{
			name: "a child starts after its parent closed, with its end",
			play: func(f *family) {
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				f.child(f.grant(child0, 20), nil)
				f.child(f.grant(child2, 21), nil) // its sibling's fence was first: refused, fine
			},
		},
		{
			name: "a child that committed under an earlier claim starts from its own checkpoint, given no parents",
			play: func(f *family) {
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				f.child(f.grant(child0, 20), nil)
				_ = f.store.Commit(context.Background(), child0, 20, 5)
				again := f.grant(child0, 30)
				_ = f.store.Fence(context.Background(), child0, 30)
				f.l.start("w2", again, offsets.Checkpoint{Offset: 5, Token: 20, Floor: 30}, nil)
			},
		},
		{
			name: "a child starts before its parent closed",
			play: func(f *family) {
				f.owner(f.grant(parent0, 3), 10)
				f.child(f.grant(child0, 20), nil)
			},
			want: []string{"child s2-000: w1's handler for s2-000@20 started at t=", "before its parent stream/shard-000 closed: no Close of it succeeded"},
		},
		{
			name: "a parent's Close succeeded in a reshard cancelled since, not in this one",
			play: func(f *family) {
				f.cfg.Layouts[0].Cancelled = &shard.Mark{By: "test"}
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				f.cfg.Layouts = append(f.cfg.Layouts, shard.Layout{Shards: 4, Name: "s3", Lineage: shard.LineageMod})
				f.child(f.grant("s3-000", 20), nil)
			},
			want: []string{"before its parent stream/shard-000 closed in this reshard (layout 2): its latest Close, @3 at t=", "was in the reshard of layout 1"},
		},
		{
			name:     "a parent commits after its child fenced it",
			careless: true,
			play: func(f *family) {
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				f.grant(child0, 20)
				_ = f.store.Fence(context.Background(), parent0, 20) // the child's fence, before its handler starts
				_ = f.store.Commit(context.Background(), parent0, 3, 14)
			},
			want: []string{"parent stream/shard-000: commit @3 of offset 14 accepted at t=", "after its child s2-000 fenced it with token 20"},
		},
		{
			name: "a child is given a checkpoint that is not its parent's end",
			play: func(f *family) {
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				f.child(f.grant(child0, 20), map[shard.ID]offsets.Checkpoint{parent0: {Offset: 10, Token: 3, Floor: 20}})
			},
			want: []string{"was given its parent stream/shard-000's checkpoint as offset 10 @3, but its last accepted commit is offset 12 @3"},
		},
		{
			name: "a parent's owner commits past its close",
			play: func(f *family) {
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				_ = f.store.Commit(context.Background(), parent0, 3, 15)
				f.child(f.grant(child0, 20), nil)
			},
			want: []string{"its parent stream/shard-000's last accepted commit, @3 offset 15 at t=", "is not its close, @3 offset 12"},
		},
		{
			name: "a closed parent runs again after its child started",
			play: func(f *family) {
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				f.child(f.grant(child0, 20), nil)
				f.l.start("w2", f.grant(parent0, 25), offsets.Checkpoint{Offset: 12, Token: 3}, nil)
			},
			want: []string{"closed parent stream/shard-000 runs again: w2's handler for stream/shard-000@25 started", "after its child s2-000 fenced it"},
		},
		{
			name: "a closed parent taken back before any child opened is counted",
			play: func(f *family) {
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				f.l.start("w2", f.grant(parent0, 25), offsets.Checkpoint{Offset: 12, Token: 3}, nil)
			},
			reopens: 1,
		},
		{
			name: "a closed parent runs again after the reshard was cancelled",
			play: func(f *family) {
				p := f.grant(parent0, 3)
				f.owner(p, 10)
				f.close(p, 12)
				f.cfg.Layouts[0].Cancelled = &shard.Mark{By: "test"}
				f.l.start("w2", f.grant(parent0, 25), offsets.Checkpoint{Offset: 12, Token: 3}, nil)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inner offsets.Store = offmem.New()
			if tt.careless {
				inner = &careless{cps: map[shard.ID]offsets.Checkpoint{}}
			}
			f := newFamily(t, inner)
			tt.play(f)
			got := f.c.list()
			switch {
			case tt.want == nil && len(got) > 0:
				t.Fatalf("violations, want none:\n%s", strings.Join(got, "\n"))
			case tt.want != nil && len(got) != 1:
				t.Fatalf("%d violations, want one:\n%s", len(got), strings.Join(got, "\n"))
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("the violation is\n  %s\nwant it to contain\n  %s", got[0], w)
				}
			}
			if n := f.l.reopens.Load(); n != tt.reopens {
				t.Errorf("%d reopens counted, want %d", n, tt.reopens)
			}
		})
	}
}
