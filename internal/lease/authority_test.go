package lease

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

var errLost = errors.New("lost")

// TestAuthorityReadsTheClock: a process paused across its local deadline
// runs other goroutines before the lease's timer goroutine when it wakes.
// An authority's Err must refuse from the first check after the deadline
// anyway, by the clock, and make the loss stick (its context ends), even
// while the timer has not run. The timer is stopped here to stand for it.
func TestAuthorityReadsTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := shard.LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second}
		l := newLease(context.Background(), Config{Policy: p, Lost: errLost, Logger: zap.NewNop()}, "s-1", time.Now())
		l.timer.Stop() // the timer's goroutine has not run yet
		a := NewAuthority(l)

		time.Sleep(p.StepDownAfter() - time.Nanosecond)
		if err := a.Err(); err != nil {
			t.Fatalf("a nanosecond before the deadline: Err = %v, want nil", err)
		}
		time.Sleep(time.Nanosecond)
		if err := a.Err(); !errors.Is(err, errLost) {
			t.Fatalf("at the deadline, with the timer not run: Err = %v, want the lost sentinel", err)
		}
		select {
		case <-a.Context().Done():
		default:
			t.Fatal("Err saw the deadline pass but the authority's context did not end")
		}
		// A renewal that succeeds afterwards does not bring authority back.
		l.extend(time.Now())
		if err := a.Err(); !errors.Is(err, errLost) {
			t.Fatalf("after a late renewal: Err = %v, want the lost sentinel still", err)
		}
	})
}
