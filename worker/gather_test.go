package worker_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/worker"
)

// TestColdStartPlacesOnceMembersStopJoining: workers that start a few
// tens of milliseconds apart on an empty prefix each get their share at
// once: the assignor waits for the joins to stop before it places, so no
// shard is started twice (no hand-off from an early worker to a later
// one), and the fleet is balanced.
func TestColdStartPlacesOnceMembersStopJoining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 64)
		ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		for _, id := range ids {
			f.start(id, nil)
			time.Sleep(100 * time.Millisecond) // each joins within the quiet window of the one before
		}
		settle(5 * time.Second)
		if c := counts(f.owners()); len(c) != len(ids) || spread(c) != 0 {
			t.Fatalf("after the cold start: %v, want 8 shards on each of 8 workers", c)
		}
		starts := map[string]int{}
		for _, e := range f.events.list() {
			if e.start {
				starts[string(e.shard)]++
			}
		}
		for s, n := range starts {
			if n != 1 {
				t.Errorf("shard %s started %d times, want once: it was handed off during the cold start", s, n)
			}
		}
		if len(starts) != 64 {
			t.Errorf("%d shards started, want 64", len(starts))
		}
	})
}

// TestColdStartGatherIsBounded: members that keep joining do not hold the
// first placement back for longer than ColdStartGather (worker.DefaultColdStartGather);
// and a fleet that holds its shards is never held back: a worker that
// joins it later gets its share by hand-offs at once.
func TestColdStartGatherIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 200 * time.Millisecond
		joins := int((worker.DefaultColdStartGather + 2*time.Second) / every)
		f := newFleet(t, 2*joins)
		began := time.Now()
		var firstOwned time.Duration
		for i := range joins {
			f.start(fmt.Sprintf("w%02d", i), nil)
			time.Sleep(every)
			if firstOwned == 0 && len(f.owners()) > 0 {
				firstOwned = time.Since(began)
			}
		}
		if firstOwned == 0 || firstOwned > worker.DefaultColdStartGather+500*time.Millisecond {
			t.Fatalf("first shard owned after %v while members kept joining every %v, want within ColdStartGather %v (+ a step)", firstOwned, every, worker.DefaultColdStartGather)
		}
		settle(5 * time.Second)
		if c := counts(f.owners()); len(c) != joins || spread(c) > 1 {
			t.Fatalf("after the joins: %v, want %d shards over %d workers within one", c, 2*joins, joins)
		}
		f.start("late", nil)
		settle(2 * time.Second)
		if c := counts(f.owners()); c["late"] == 0 || spread(c) > 1 {
			t.Fatalf("a worker joining a running fleet waited: %v", c)
		}
	})
}
