package etcd_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/etcd"
)

// session opens a session on c, destroyed on cleanup.
func session(t *testing.T, c *etcd.Coordinator, worker string, ttl, lockDelay time.Duration) shard.SessionID {
	t.Helper()
	id, err := c.Sessions().Create(t.Context(), shard.SessionSpec{Worker: worker, TTL: ttl, LockDelay: lockDelay})
	if err != nil {
		t.Fatalf("Create(%s): %v", worker, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Sessions().Destroy(ctx, id)
	})
	return id
}

// leaseOf is session id's lease, as etcdctl names it.
func leaseOf(t *testing.T, id shard.SessionID) clientv3.LeaseID {
	t.Helper()
	n, err := strconv.ParseUint(string(id), 16, 64)
	if err != nil {
		t.Fatalf("session id %q is not a lease id: %v", id, err)
	}
	return clientv3.LeaseID(n)
}

// grants acquires ids with sid and returns the tokens granted.
func grants(t *testing.T, c *etcd.Coordinator, sid shard.SessionID, ids ...shard.ID) map[shard.ID]shard.Token {
	t.Helper()
	want := make([]shard.Acquisition, len(ids))
	for i, id := range ids {
		want[i] = shard.AcquireShard(id, shard.Why{Reason: shard.ReasonInitial})
	}
	got, err := c.Locks().Acquire(t.Context(), sid, want)
	if err != nil {
		t.Fatalf("Acquire(%s, %v): %v", sid, ids, err)
	}
	tokens := map[shard.ID]shard.Token{}
	for _, cl := range shard.Claims(got) {
		tokens[cl.Shard] = cl.Token
	}
	return tokens
}

// grantedAfter retries acquiring id with sid until granted or within
// passes, and returns the token and when it was granted.
func grantedAfter(t *testing.T, c *etcd.Coordinator, sid shard.SessionID, id shard.ID, within time.Duration) (shard.Token, time.Time) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if tok, ok := grants(t, c, sid, id)[id]; ok {
			return tok, time.Now()
		}
	}
	t.Fatalf("%s not granted to %s within %v", id, sid, within)
	return 0, time.Time{}
}

// endedByAnother checks a session ended by someone else than its worker:
// its renewal is refused, its lock is free in the fleet's view, and the
// next owner gets it a lock-delay after end (at the earliest) with a
// higher token.
func endedByAnother(t *testing.T, c *etcd.Coordinator, doomed, next shard.SessionID, first shard.Token, end func(), delay time.Duration) {
	t.Helper()
	ended := time.Now()
	end()
	if got := grants(t, c, next, "s-000"); len(got) != 0 {
		t.Fatalf("granted %v at once after the session ended, inside its lock-delay of %v", got, delay)
	}
	if err := c.Sessions().Renew(t.Context(), doomed); !errors.Is(err, shard.ErrSessionInvalid) {
		t.Fatalf("Renew of the ended session = %v, want ErrSessionInvalid", err)
	}
	snap, err := c.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := snap.Shard("s-000"); st.Held() || st.Token <= first {
		t.Errorf("the ended session's shard in the view = %+v, want free with a token above %d", st, first)
	}
	tok, at := grantedAfter(t, c, next, "s-000", delay+3*time.Second)
	if at.Sub(ended) < delay {
		t.Errorf("granted %v after the session ended, inside its lock-delay of %v", at.Sub(ended), delay)
	}
	if tok <= first {
		t.Errorf("token %d after the lock-delay, want above the ended session's %d", tok, first)
	}
}

// TestLeaseRevokedByAThirdParty: etcdctl lease revoke ends the session
// as Destroy does, lock-delay included.
func TestLeaseRevokedByAThirdParty(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	const delay = 2 * time.Second
	a := session(t, c, "w-a", time.Hour, delay)
	b := session(t, c, "w-b", time.Hour, 0)
	first := grants(t, c, a, "s-000")["s-000"]
	endedByAnother(t, c, a, b, first, func() {
		if _, err := client(t, cluster).Revoke(t.Context(), leaseOf(t, a)); err != nil {
			t.Fatalf("revoking %s's lease: %v", a, err)
		}
	}, delay)
}

// TestSessionKeyDeletedByHand: a session key deleted while its lease
// lives ends the session; the lease is revoked by whoever finds it, and
// the lock-delay counts from then.
func TestSessionKeyDeletedByHand(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	const delay = 2 * time.Second
	a := session(t, c, "w-a", time.Hour, delay)
	b := session(t, c, "w-b", time.Hour, 0)
	first := grants(t, c, a, "s-000")["s-000"]
	endedByAnother(t, c, a, b, first, func() {
		if _, err := client(t, cluster).Delete(t.Context(), c.Prefix()+"/sessions/"+string(a)); err != nil {
			t.Fatalf("deleting %s's key: %v", a, err)
		}
	}, delay)
	ttl, err := client(t, cluster).TimeToLive(t.Context(), leaseOf(t, a))
	if err != nil || ttl.TTL != -1 {
		t.Errorf("the session's lease after its key was deleted: TTL %v, %v; want revoked (-1)", ttl.TTL, err)
	}
}

// TestLeaseTTLRoundsUp: a lease counts whole seconds, and a session's TTL
// is never shortened to fit.
func TestLeaseTTLRoundsUp(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	for _, ttl := range []time.Duration{1500 * time.Millisecond, 2 * time.Second, 2100 * time.Millisecond} {
		id := session(t, c, "w", ttl, 0)
		got, err := client(t, cluster).TimeToLive(t.Context(), leaseOf(t, id))
		if err != nil {
			t.Fatal(err)
		}
		if time.Duration(got.GrantedTTL)*time.Second < ttl {
			t.Errorf("session TTL %v: lease granted %d s, shorter", ttl, got.GrantedTTL)
		}
	}
}
