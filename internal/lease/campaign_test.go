package lease

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

// TestCampaignWaitsOutTheLockDelay: a candidate takes a free lock at
// once; another waits while it is held, and when the holder's session is
// destroyed (which leaves the lock in its lock-delay) takes it once the
// lock-delay is over, not before, and with a higher token.
func TestCampaignWaitsOutTheLockDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := shard.LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second, LockDelay: 5 * time.Second}
		coord := memory.New()
		ctx := t.Context()
		open := func() shard.SessionID {
			sid, err := coord.Sessions().Create(ctx, p.SessionSpec("w"))
			if err != nil {
				t.Fatal(err)
			}
			return sid
		}
		type term struct {
			at    time.Time
			token shard.Token
		}
		var mu sync.Mutex
		terms := map[shard.SessionID]term{}
		var campaigns sync.WaitGroup
		t.Cleanup(campaigns.Wait)
		campaign := func(sid shard.SessionID) {
			c := Candidacy{Locks: coord.Locks(), Session: sid, Lock: shard.RoleLock("leader"), Policy: p}
			campaigns.Go(func() {
				_ = Campaign(ctx, c, func(token shard.Token) {
					mu.Lock()
					terms[sid] = term{time.Now(), token}
					mu.Unlock()
					<-ctx.Done()
				})
			})
		}

		a := open()
		campaign(a)
		synctest.Wait()
		b := open()
		campaign(b)
		time.Sleep(time.Second)
		synctest.Wait()
		destroyed := time.Now()
		if err := coord.Sessions().Destroy(ctx, a); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * p.LockDelay)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		ta, tb := terms[a], terms[b]
		if ta.token == 0 {
			t.Fatal("the first candidate never took the free lock")
		}
		if tb.token <= ta.token || tb.at.Sub(destroyed) < p.LockDelay {
			t.Errorf("second candidate took the lock %v after the holder's destroy with token %d; want after the lock-delay %v and above %d",
				tb.at.Sub(destroyed), tb.token, p.LockDelay, ta.token)
		}
	})
}
