package worker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
)

// TestAssignorRoleEndsEveryWay: a candidate waits on a held P/assignor
// without a deadline, counting on every end of the holder's term to be a
// write that wakes it. For each way the role can end — the key deleted by
// an operator (no lock-delay), the holder's session destroyed (its
// lock-delay keeps the key closed, and its end wakes nobody), the holder's
// session expired (its worker cut off) — exactly one worker holds the role
// again within a bound, with a higher epoch, and the fleet stays balanced.
func TestAssignorRoleEndsEveryWay(t *testing.T) {
	for _, how := range []string{"deleted by hand", "session destroyed", "session expired"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t, 12)
				ids := []string{"a", "b", "c"}
				for _, id := range ids {
					f.start(id, nil)
				}
				settle(5 * time.Second)
				old := f.assignorOf()
				if !old.Held() {
					t.Fatal("no assignor after 5 s")
				}
				switch how {
				case "deleted by hand":
					if !f.coord.DeleteAssignor() {
						t.Fatal("DeleteAssignor: no key")
					}
				case "session destroyed":
					if err := f.coord.Sessions().Destroy(context.Background(), old.Session); err != nil {
						t.Fatal(err)
					}
				case "session expired":
					f.running[old.Worker].faults.Set(faults.Hang)
				}
				// The TTL, the lock-delay, a candidate's bounded retry after
				// it (a quarter of the lock-delay at most) and a listing.
				settle(testPolicy.TTL + testPolicy.LockDelay + testPolicy.LockDelay/4 + 2*time.Second)
				now := f.assignorOf()
				if !now.Held() || now.Token <= old.Token {
					t.Fatalf("after the role ended (%s): assignor %+v, want one with an epoch above %d", how, now, old.Token)
				}
				leaders := 0
				for _, id := range ids {
					if e := f.running[id].w.Status().AssignorEpoch; e != 0 {
						leaders++
						if e != now.Token {
							t.Errorf("%s says it is the assignor at epoch %d; the key says %d", id, e, now.Token)
						}
					}
				}
				if leaders != 1 {
					t.Errorf("%d workers say they are the assignor, want 1", leaders)
				}
				if c := counts(f.owners()); len(f.owners()) != 12 || spread(c) > 1 {
					t.Errorf("after the role ended (%s): %v owned, want all 12 within one", how, c)
				}
			})
		})
	}
}
