package worker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/shard"
)

// TestFreezeOutlivesTheAssignor: a freeze is the fleet's, not the
// assignor's. With the fleet frozen the assignor's worker crashes: the new
// assignor, which has only the coordinator to go by, still fails the
// crashed worker's shards over (placing free shards is not a move), and a
// worker that joins afterwards gets nothing until the freeze is lifted,
// when the fleet is balanced again. It fails if a new assignor forgets the
// freeze, or if a freeze stops failover.
func TestFreezeOutlivesTheAssignor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 12)
		for _, id := range []string{"a", "b", "c"} {
			f.start(id, nil)
		}
		settle(10 * time.Second)
		if err := f.coord.Fleet().SetFreeze(t.Context(), &shard.Mark{By: "ops", At: time.Now(), Reason: "incident"}); err != nil {
			t.Fatal(err)
		}
		settle(2 * time.Second)
		old := f.assignorOf()
		crashed := f.running[old.Worker]
		crashed.faults.Set(faults.Fail)
		settle(testPolicy.TTL + testPolicy.LockDelay + 10*time.Second)
		now := f.assignorOf()
		if !now.Held() || now.Worker == old.Worker {
			t.Fatalf("after the frozen fleet's assignor crashed: assignor %+v, want another worker", now)
		}
		c := counts(f.owners())
		if c[old.Worker] != 0 || c["a"]+c["b"]+c["c"] != 12 {
			t.Fatalf("frozen, after %s crashed: %v, want its shards failed over to the two others", old.Worker, c)
		}
		before := f.owners()

		f.start("d", nil)
		settle(10 * time.Second)
		if after := f.owners(); len(after) != 12 || counts(after)["d"] != 0 {
			t.Fatalf("frozen, a worker that joined got shards: %v", counts(after))
		}
		for s, w := range f.owners() {
			if before[s] != w {
				t.Fatalf("frozen, shard %s moved from %s to %s under the new assignor", s, before[s], w)
			}
		}

		if err := f.coord.Fleet().SetFreeze(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		settle(10 * time.Second)
		if c := counts(f.owners()); c["d"] == 0 || spread(c) > 1 {
			t.Fatalf("after the freeze was lifted: %v, want d to get its share, within one", c)
		}
		for _, o := range overlaps(f.events.list()) {
			t.Errorf("two workers ran one shard: %s", o)
		}
		crashed.faults.Set(faults.Healthy)
	})
}
