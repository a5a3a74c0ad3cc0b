package worker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
)

// TestJoinIsAbsorbedWithinAQuarterRound: a worker joining a converged fleet
// is balanced in within about RoundEvery/4 (1 s by default), not after the
// joiner's first round and every owner's next one (up to 1.5 s each).
func TestJoinIsAbsorbedWithinAQuarterRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 12)
		for _, id := range []string{"a", "b", "c"} {
			f.start(id, nil)
		}
		settle(20 * time.Second)
		if c := counts(f.owners()); len(c) != 3 || spread(c) != 0 {
			t.Fatalf("before the join: counts %v, want 4 each", c)
		}
		joined := time.Now()
		f.start("d", nil)
		settle(400 * time.Millisecond)
		owners := f.owners()
		if c := counts(owners); len(owners) != 12 || c["d"] != 3 || spread(c) > 1 {
			t.Errorf("%v after d joined: %d of 12 shards owned, counts %v; want d to own 3", time.Since(joined), len(owners), c)
		}
	})
}

// TestRefusedShardRetriedWhenLockDelayEnds: a shard freed by an
// invalidated session is refused while the lock-delay lasts; its designated
// acquirer takes it right after the delay, without waiting for its next
// round (RoundEvery is long here, so a round could not explain it).
func TestRefusedShardRetriedWhenLockDelayEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 4)
		roundEvery := 8 * time.Second
		cfgA, cfgB := f.config("a", f.events.waiting("a")), f.config("b", f.events.waiting("b"))
		cfgA.RoundEvery, cfgB.RoundEvery = roundEvery, roundEvery
		f.startWith(cfgA)
		b := f.startWith(cfgB)
		settle(time.Minute)
		if c := counts(f.owners()); c["a"] != 2 || c["b"] != 2 {
			t.Fatalf("before: counts %v, want 2 each", c)
		}
		b.faults.Set(faults.Fail) // b is cut off: its session expires
		var freed time.Time
		for deadline := time.Now().Add(testPolicy.TTL + time.Second); time.Now().Before(deadline); {
			settle(10 * time.Millisecond)
			if m, ok := f.snapshot().Member("b"); !ok || !m.Live() {
				freed = time.Now()
				break
			}
		}
		if freed.IsZero() {
			t.Fatalf("b's session was not invalidated within the TTL")
		}
		settle(testLockDelay + 200*time.Millisecond)
		if c := counts(f.owners()); c["a"] != 4 {
			t.Errorf("%v after b's session ended (lock-delay %v, rounds every %v): counts %v, want a to own all 4",
				time.Since(freed), testLockDelay, roundEvery, c)
		}
	})
}
