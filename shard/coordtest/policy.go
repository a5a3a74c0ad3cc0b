package coordtest

import (
	"errors"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// policy: SetPolicy with ifNone stores the first policy proposed and
// returns it to every later proposer unchanged; without ifNone it
// replaces it, a watch wakes for the change, and the snapshot shows it
// as written; a policy Validate refuses is refused before anything is
// written.
func (s *suite) policy(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	configure(t, c, 4)
	if p := snapshot(t, c).Policy; p != nil {
		t.Fatalf("a new fleet's snapshot has Policy %v, want nil", *p)
	}
	first := shard.BalancePolicy{MaxMovesInFlight: 8, StuckAfter: 40 * time.Second}
	got, err := c.Fleet().SetPolicy(ctx, first, true)
	if err != nil || !got.Equal(first) {
		t.Fatalf("SetPolicy(%v, ifNone) on a fleet without one = %v, %v; want it stored", first, got, err)
	}
	second := shard.BalancePolicy{MaxMovesInFlight: 2, Load: &shard.LoadBalance{Tolerance: 0.05}}
	if got, err := c.Fleet().SetPolicy(ctx, second, true); err != nil || !got.Equal(first) {
		t.Fatalf("SetPolicy(%v, ifNone) over %v = %v, %v; want the stored one back, unchanged", second, first, got, err)
	}
	before := snapshot(t, c)
	if before.Policy == nil || !before.Policy.Equal(first) {
		t.Fatalf("snapshot Policy = %v, want %v", before.Policy, first)
	}
	if got, err := c.Fleet().SetPolicy(ctx, second, false); err != nil || !got.Equal(second) {
		t.Fatalf("SetPolicy(%v) = %v, %v; want it stored", second, got, err)
	}
	snap, err := c.Fleet().Watch(ctx, before.Index)
	if err != nil {
		t.Fatalf("Watch(%d) after SetPolicy: %v", before.Index, err)
	}
	if snap.Policy == nil || !snap.Policy.Equal(second) || len(snap.Problems) > 0 {
		t.Fatalf("after SetPolicy the snapshot has Policy %v and problems %q, want %v and none", snap.Policy, snap.Problems, second)
	}
	bad := shard.BalancePolicy{MaxMovesInFlight: -1, Load: &shard.LoadBalance{Tolerance: 1.5}}
	for _, ifNone := range []bool{false, true} {
		if _, err := c.Fleet().SetPolicy(ctx, bad, ifNone); !errors.Is(err, shard.ErrInvalidArgument) {
			t.Fatalf("SetPolicy(%v, ifNone %v) = %v, want ErrInvalidArgument", bad, ifNone, err)
		}
	}
	if p := snapshot(t, c).Policy; p == nil || !p.Equal(second) {
		t.Fatalf("a refused SetPolicy changed the stored policy to %v", p)
	}
}
