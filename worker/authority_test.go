package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestAuthorityReadsTheClock: a process paused across its local deadline
// runs other goroutines before the lease's timer goroutine when it wakes.
// A claim's Err must refuse from the first check after the deadline
// anyway, by the clock, and make the loss stick (Lost closes), even while
// the timer has not run. The timer is stopped here to stand for it.
func TestAuthorityReadsTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := shard.LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second}
		l := newLease(context.Background(), "s-1", time.Now(), p)
		l.timer.Stop() // the timer's goroutine has not run yet
		a := newAuthority(l)
		c := &Claim{auth: a}

		time.Sleep(p.StepDownAfter() - time.Nanosecond)
		if err := c.Err(); err != nil {
			t.Fatalf("a nanosecond before the deadline: Err = %v, want nil", err)
		}
		time.Sleep(time.Nanosecond)
		err := c.Err()
		if !errors.Is(err, ErrLost) {
			t.Fatalf("at the deadline, with the timer not run: Err = %v, want ErrLost", err)
		}
		select {
		case <-c.Lost():
		default:
			t.Fatal("Err saw the deadline pass but Lost did not close")
		}
		// A renewal that succeeds afterwards does not bring authority back.
		l.extend(time.Now(), p)
		if err := c.Err(); !errors.Is(err, ErrLost) {
			t.Fatalf("after a late renewal: Err = %v, want ErrLost still", err)
		}
	})
}

// TestHandMadeClaimCannotCommit: a Claim no worker issued has nothing to
// lose (Lost never closes, Err is nil), and its Commit is refused with an
// error naming the shard, not a panic.
func TestHandMadeClaimCannotCommit(t *testing.T) {
	c := &Claim{Claim: shard.Claim{Shard: "s-007", Token: 3}}
	if c.Lost() != nil || c.Err() != nil {
		t.Fatalf("hand-made claim: Lost %v, Err %v; want nil, nil", c.Lost(), c.Err())
	}
	err := c.Commit(context.Background(), 1)
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "s-007") {
		t.Fatalf("Commit of a hand-made claim: %v, want ErrLost naming shard s-007", err)
	}
}
