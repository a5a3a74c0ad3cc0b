package coordtest

import (
	"context"
	"errors"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// generation: RaiseGeneration needs a stored config and a higher
// generation, and refuses anything else without a write. After a raise,
// every new lock's token carries the new generation and is above every
// earlier token, a lock held from before keeps its token (in Acquire's
// answer and in snapshots), the assignor's epoch of the new generation
// fences its writes as before, and a worker's config, which carries no
// generation, still joins the raised fleet.
func (s *suite) generation(t *testing.T) {
	c := s.open(t)
	ctx := context.Background()
	if _, err := c.Fleet().RaiseGeneration(ctx, 1); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("RaiseGeneration without a stored config = %v, want ErrInvalidArgument", err)
	}
	cfg := configure(t, c, 4)
	ids := cfg.IDs()
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)
	before := acquire(t, c, a, ids[0], ids[1])
	if g := before[ids[0]].Generation(); g != 0 {
		t.Fatalf("token %d before any raise is of generation %d, want 0", before[ids[0]], g)
	}
	release(t, c, a, shard.ReasonRebalance, ids[1])

	idx := snapshot(t, c).Index
	for _, gen := range []uint32{0, shard.MaxGeneration + 1} {
		if _, err := c.Fleet().RaiseGeneration(ctx, gen); !errors.Is(err, shard.ErrInvalidArgument) {
			t.Fatalf("RaiseGeneration(%d) on a fleet at 0 = %v, want ErrInvalidArgument", gen, err)
		}
	}
	noWrite(t, c, idx, quiet, "refused raises")

	stored, err := c.Fleet().RaiseGeneration(ctx, 2)
	if err != nil || stored.Generation != 2 || !stored.Equal(cfg) {
		t.Fatalf("RaiseGeneration(2) = %+v, %v; want the fleet's config at generation 2", stored, err)
	}
	if _, err := c.Fleet().RaiseGeneration(ctx, 2); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("RaiseGeneration(2) again = %v, want ErrInvalidArgument (not above the fleet's)", err)
	}
	if snap := snapshot(t, c); snap.Config == nil || snap.Config.Generation != 2 {
		t.Fatalf("snapshot config after the raise = %+v, want generation 2", snap.Config)
	}
	if got, err := c.Fleet().Configure(ctx, cfg); err != nil || got.Generation != 2 {
		t.Fatalf("Configure with a worker's config on a raised fleet = %+v, %v; want the stored config at generation 2", got, err)
	}

	after := acquire(t, c, b, ids[1], ids[2])
	for _, id := range ids[1:3] {
		if tok := after[id]; tok.Generation() != 2 || tok <= before[ids[0]] {
			t.Fatalf("%s's token after the raise = %d (generation %d), want generation 2, above %d", id, tok, tok.Generation(), before[ids[0]])
		}
	}
	if again := acquire(t, c, a, ids[0]); again[ids[0]] != before[ids[0]] {
		t.Fatalf("a lock held from before the raise re-acquired = %d, want its token %d unchanged", again[ids[0]], before[ids[0]])
	}
	snap := snapshot(t, c)
	for _, st := range snap.Shards {
		want, ok := map[shard.ID]shard.Token{ids[0]: before[ids[0]], ids[1]: after[ids[1]], ids[2]: after[ids[2]]}[st.Shard]
		if ok && (st.Token != want || st.Owner.Gen != want.Generation()) {
			t.Fatalf("snapshot shows %s at token %d (owner generation %d), want %d", st.Shard, st.Token, st.Owner.Gen, want)
		}
	}
	k, err := c.Locks().Watch(ctx, shard.ShardLock(ids[1]), 0)
	if err != nil || k.Token != after[ids[1]] {
		t.Fatalf("Locks.Watch(%s) = %+v, %v; want token %d", ids[1], k, err, after[ids[1]])
	}

	epoch := campaignHeld(t, c, b, "w-b")
	if epoch.Generation() != 2 {
		t.Fatalf("assignor epoch %d after the raise is of generation %d, want 2", epoch, epoch.Generation())
	}
	assign(t, c, b, epoch, map[string]*shard.Assignment{"w-b": {Shards: ids[1:3]}})
}
