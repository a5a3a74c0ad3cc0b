package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/etcd"
)

// TestUnreadableLockIsHeldByNobody: a lock key overwritten by hand with a
// value that is not an envelope is taken by no session until it is
// deleted, and the fleet's view says so.
func TestUnreadableLockIsHeldByNobody(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	a := session(t, c, "w-a", time.Hour, 0)
	cli := client(t, cluster)
	key := c.Prefix() + "/shards/s-000"
	if _, err := cli.Put(t.Context(), key, `{"worker":"w-z"}`); err != nil {
		t.Fatal(err)
	}
	if got := grants(t, c, a, "s-000"); len(got) != 0 {
		t.Fatalf("granted %v on a lock whose holder cannot be read", got)
	}
	snap, err := c.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := snap.Shard("s-000"); !st.Held() {
		t.Errorf("the unreadable lock in the view = %+v, want held (by nobody known)", st)
	}
	if !strings.Contains(strings.Join(snap.Problems, "\n"), key) {
		t.Errorf("problems %q do not name %s", snap.Problems, key)
	}
	if _, err := cli.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got := grants(t, c, a, "s-000"); len(got) != 1 {
		t.Fatalf("after the key was deleted: granted %v, want s-000", got)
	}

	// A member key written by hand as Consul's would be is dead, and its
	// worker takes it back when it joins.
	if _, err := cli.Put(t.Context(), c.Prefix()+"/members/w-a", `{"id":"w-a","weight":1}`); err != nil {
		t.Fatal(err)
	}
	if k, err := c.Members().Watch(t.Context(), "w-a", 0); err != nil || !k.Exists || k.Member.Live() {
		t.Fatalf("member key written by hand = %+v, %v; want it dead", k, err)
	}
	if err := c.Members().Join(t.Context(), a, shard.Member{ID: "w-a", Weight: 2}); err != nil {
		t.Fatalf("Join over the hand-written key: %v", err)
	}
	if k, err := c.Members().Watch(t.Context(), "w-a", 0); err != nil || k.Member.Session != a || k.Member.Weight != 2 {
		t.Fatalf("after Join: %+v, %v; want held by %s with weight 2", k, err, a)
	}
}

// TestWatchAcrossCompaction: a watch from an index etcd has compacted
// away returns at once with the key as it is, instead of failing.
func TestWatchAcrossCompaction(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	a := session(t, c, "w-a", time.Hour, 0)
	if err := c.Members().Join(t.Context(), a, shard.Member{ID: "w-a", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	k, err := c.Members().Watch(t.Context(), "w-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	grants(t, c, a, "s-000", "s-001") // other writes, so there is history to compact
	cli := client(t, cluster)
	resp, err := cli.Get(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(t.Context(), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := c.Members().Watch(t.Context(), "w-a", k.Index-1)
	if err != nil {
		t.Fatalf("Watch from a compacted index: %v", err)
	}
	if d := time.Since(start); d > time.Second || !got.Exists || got.Member.Weight != 1 || got.Member.Session != a {
		t.Fatalf("Watch from a compacted index = %+v after %v, want w-a as it is, at once", got, d)
	}
}

// TestFleetWatchAcrossARestart: the fleet's mirror follows the prefix
// across a restart of etcd.
func TestFleetWatchAcrossARestart(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	a := session(t, c, "w-a", time.Hour, 0)
	snap, err := c.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	m := cluster.Members[0]
	m.Kill()
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := c.Locks().Acquire(t.Context(), a, []shard.Acquisition{shard.AcquireShard("s-000", shard.Why{})}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("acquire after the restart: %v", err)
		}
	}
	snap = waitFor(t, c, snap.Index, 10*time.Second, func(s shard.Snapshot) bool {
		st, _ := s.Shard("s-000")
		return st.Session == a
	})
	if st, _ := snap.Shard("s-000"); st.Session != a {
		t.Fatalf("after the restart the view shows %+v", st)
	}
}

// waitFor follows c's fleet from after until cond holds, for at most
// within.
func waitFor(t *testing.T, c *etcd.Coordinator, after uint64, within time.Duration, cond func(shard.Snapshot) bool) shard.Snapshot {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ctx, cancel := contextWithDeadline(t, deadline)
		snap, err := c.Fleet().Watch(ctx, after)
		cancel()
		if err == nil && cond(snap) {
			return snap
		}
		if err == nil {
			after = shard.NextIndex(after, snap.Index)
		}
	}
	t.Fatalf("the fleet's view did not get there within %v", within)
	return shard.Snapshot{}
}

// TestLeaderKilled: on a three-member cluster, a session outlives the
// leader's death, keeps its locks, and writes again once a new leader is
// elected; tokens keep increasing.
func TestLeaderKilled(t *testing.T) {
	cluster := etcdtest.StartCluster(t, 3)
	c := newCoordinator(t, cluster)
	a := session(t, c, "w-a", 10*time.Second, 0)
	first := grants(t, c, a, "s-000")["s-000"]
	leader, err := cluster.Leader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	leader.Kill()
	var renewErr error
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if renewErr = c.Sessions().Renew(t.Context(), a); renewErr == nil {
			break
		}
	}
	if renewErr != nil {
		t.Fatalf("renewing across the leader's death: %v", renewErr)
	}
	if got := grants(t, c, a, "s-000"); got["s-000"] != first {
		t.Errorf("after the leader's death the session holds %v, want s-000 at %d", got, first)
	}
	second := grants(t, c, a, "s-001")["s-001"]
	if second <= first {
		t.Errorf("a lock taken after the election has token %d, not above %d", second, first)
	}
	if err := leader.Restart(); err != nil {
		t.Fatal(err)
	}
}

// TestUnreachable: every call names etcd as unavailable within the
// request timeout, without a session or a lock to show for it.
func TestUnreachable(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c, err := etcd.New(etcd.Config{Client: cli, Prefix: freshPrefix(), RequestTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Sessions().Create(t.Context(), shard.SessionSpec{Worker: "w", TTL: time.Second}); !errors.Is(err, shard.ErrUnavailable) {
		t.Errorf("Create = %v, want ErrUnavailable", err)
	}
	if _, err := c.Fleet().Watch(t.Context(), 0); !errors.Is(err, shard.ErrUnavailable) {
		t.Errorf("Watch(0) = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("two calls took %v with a request timeout of 500ms", d)
	}
}

// TestBadConfigAndSession: each wrong value is named, with what to do.
func TestBadConfigAndSession(t *testing.T) {
	_, err := etcd.New(etcd.Config{Prefix: "/a/", RequestTimeout: -time.Second})
	for _, want := range []string{"no Client", `prefix "/a/"`, "request timeout -1s"} {
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("New(bad config) = %v, want ErrInvalidArgument naming %q", err, want)
		}
	}
	err = etcd.ValidateSession(shard.SessionSpec{TTL: -time.Second, LockDelay: 2 * time.Minute})
	for _, want := range []string{"worker is empty", "ttl -1s", "lock-delay 2m0s exceeds the maximum 1m0s"} {
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateSession(bad) = %v, want ErrInvalidArgument naming %q", err, want)
		}
	}
}

// TestDeleteFreeShard deletes only a free lock key: never one a live
// session holds, one in its lock-delay, or one whose holder is unknown.
func TestDeleteFreeShard(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	const delay = 2 * time.Second
	a := session(t, c, "w-a", time.Hour, delay)
	grants(t, c, a, "s-000")
	if existed, err := c.DeleteFreeShard(t.Context(), "s-000"); !existed || !errors.Is(err, shard.ErrKeyHeld) {
		t.Fatalf("DeleteFreeShard of a held key = %v, %v; want ErrKeyHeld", existed, err)
	}
	if err := c.Sessions().Destroy(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if existed, err := c.DeleteFreeShard(t.Context(), "s-000"); !existed || !errors.Is(err, shard.ErrKeyHeld) || !strings.Contains(err.Error(), "lock-delay") {
		t.Fatalf("DeleteFreeShard inside the lock-delay = %v, %v; want ErrKeyHeld naming the lock-delay", existed, err)
	}
	time.Sleep(delay)
	if existed, err := c.DeleteFreeShard(t.Context(), "s-000"); !existed || err != nil {
		t.Fatalf("DeleteFreeShard after the lock-delay = %v, %v; want deleted", existed, err)
	}
	if existed, err := c.DeleteFreeShard(t.Context(), "s-000"); existed || err != nil {
		t.Fatalf("DeleteFreeShard of a missing key = %v, %v; want false, nil", existed, err)
	}
	if _, err := client(t, cluster).Put(t.Context(), c.Prefix()+"/shards/s-001", "garbage"); err != nil {
		t.Fatal(err)
	}
	if existed, err := c.DeleteFreeShard(t.Context(), "s-001"); !existed || !errors.Is(err, shard.ErrKeyHeld) {
		t.Fatalf("DeleteFreeShard of an unreadable key = %v, %v; want ErrKeyHeld", existed, err)
	}
}

// TestWatchSeesAHolderEndAfterItsIndex: a lock's watch from an index
// taken while its holder lived wakes when the holder's session ends, even
// when the end came before the call (a candidate for a role that read the
// holder alive, then waits on the key).
func TestWatchSeesAHolderEndAfterItsIndex(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	a := session(t, c, "w-a", time.Hour, 0)
	if _, ok, err := shard.TryLock(t.Context(), c.Locks(), a, shard.AssignorLock); err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	k, err := c.Locks().Watch(t.Context(), shard.AssignorLock, 0)
	if err != nil || !k.Held() {
		t.Fatalf("Watch(0) = %+v, %v", k, err)
	}
	if err := c.Sessions().Destroy(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	got, err := c.Locks().Watch(ctx, shard.AssignorLock, k.Index)
	if err != nil || got.Held() || got.Index == k.Index {
		t.Fatalf("Watch(%d) after the holder ended = %+v, %v; want free at a new index, at once", k.Index, got, err)
	}
}

// TestIdleWatchAfterCompactionWaits: once etcd compacted the revisions an
// idle key's index points into, its watch waits for a change (here
// WatchWait) instead of returning the same index again and again.
func TestIdleWatchAfterCompactionWaits(t *testing.T) {
	cluster := etcdtest.Start(t)
	const wait = time.Second
	c := newCoordinator(t, cluster, func(cfg *etcd.Config) { cfg.WatchWait = wait })
	a := session(t, c, "w-a", time.Hour, 0)
	if err := c.Members().Join(t.Context(), a, shard.Member{ID: "w-a"}); err != nil {
		t.Fatal(err)
	}
	k, err := c.Members().Watch(t.Context(), "w-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	cli := client(t, cluster)
	var rev int64
	for i := range 3 { // revisions past the key's, to compact away
		resp, err := cli.Put(t.Context(), c.Prefix()+"-other", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	if _, err := cli.Compact(t.Context(), rev); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := c.Members().Watch(t.Context(), "w-a", k.Index)
	if d := time.Since(start); err != nil || got.Index != k.Index || d < wait {
		t.Fatalf("Watch(%d) of an idle key after compaction = %+v, %v after %v; want the same index after the watch's wait of %v", k.Index, got, err, d, wait)
	}
}

// TestFleetWatchCatchesUpBesideKeyWatches: a snapshot as new as the call
// needs etcd to say the mirror's watch has caught up, which etcd says
// only for a stream whose every watch has: key watches waiting from a
// future revision (a missing key, a quiet fleet) must not stand in its
// way, nor writes to other prefixes.
func TestFleetWatchCatchesUpBesideKeyWatches(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster, func(cfg *etcd.Config) { cfg.RequestTimeout = 3 * time.Second })
	if _, err := c.Fleet().Watch(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := client(t, cluster).Put(t.Context(), "elsewhere", "x"); err != nil {
		t.Fatal(err)
	}
	k, err := c.Members().Watch(t.Context(), "nobody", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waiting := make(chan error, 1)
	go func() { _, err := c.Members().Watch(ctx, "nobody", k.Index); waiting <- err }() // from a revision to come
	time.Sleep(200 * time.Millisecond)                                                  // the key watch is in place
	if _, err := c.Fleet().Watch(t.Context(), 0); err != nil {
		t.Fatalf("Watch(0) beside a waiting key watch, after a write elsewhere: %v", err)
	}
	cancel()
	<-waiting
}

// TestEtcdRebuiltEmpty: an etcd rebuilt from nothing at the same address
// counts its revisions from 1 again. The fleet's mirror, whose watch the
// client resumes at the old (now future) revision, must not serve the old
// fleet: Watch(0) shows the new one, and a watch from an old index
// returns a lower index (shard.NextIndex restarts) instead of waiting.
func TestEtcdRebuiltEmpty(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster, func(cfg *etcd.Config) { cfg.RequestTimeout = 3 * time.Second })
	a := session(t, c, "w-a", time.Hour, 0)
	if _, err := c.Fleet().Configure(t.Context(), shard.Config{Shards: 4}); err != nil {
		t.Fatal(err)
	}
	cli := client(t, cluster)
	for i := range 30 { // revisions the rebuilt etcd will not reach
		if _, err := cli.Put(t.Context(), c.Prefix()+"-other", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	id := shard.Config{Shards: 4}.IDs()[0]
	grants(t, c, a, id)
	old, err := c.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := old.Shard(id); !ok || st.Session != a {
		t.Fatalf("before the rebuild: %+v", st)
	}
	if err := cluster.Members[0].Wipe(); err != nil {
		t.Fatal(err)
	}
	var now shard.Snapshot
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if now, err = c.Fleet().Watch(t.Context(), 0); err == nil && len(now.Shards) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Watch(0) after the rebuild = %d shard keys (index %d), %v; want the empty fleet", len(now.Shards), now.Index, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got, err := c.Fleet().Watch(ctx, old.Index)
	if err != nil || got.Index >= old.Index {
		t.Fatalf("Watch(%d) after the rebuild = index %d, %v; want a lower index at once", old.Index, got.Index, err)
	}
}

// TestHandWrittenEnvelopeGrantsNothing: a lock's envelope rewritten by
// hand to name another live session, well formed, does not make that
// session its owner: its Acquire grants nothing (the session never took
// the lock, and its first holder may still run it), nor does the first
// holder's.
func TestHandWrittenEnvelopeGrantsNothing(t *testing.T) {
	cluster := etcdtest.Start(t)
	c := newCoordinator(t, cluster)
	a := session(t, c, "w-a", time.Hour, 0)
	b := session(t, c, "w-b", time.Hour, 0)
	grants(t, c, a, "s-000")
	cli := client(t, cluster)
	key := c.Prefix() + "/shards/s-000"
	resp, err := cli.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s: %v", key, err)
	}
	forged := strings.Replace(string(resp.Kvs[0].Value), string(a), string(b), 1)
	if forged == string(resp.Kvs[0].Value) {
		t.Fatalf("the envelope %s does not name %s", resp.Kvs[0].Value, a)
	}
	if _, err := cli.Put(t.Context(), key, forged); err != nil {
		t.Fatal(err)
	}
	for _, s := range []shard.SessionID{b, a} {
		if got := grants(t, c, s, "s-000"); len(got) != 0 {
			t.Errorf("session %s granted %v on a lock a hand edit named %s in", s, got, b)
		}
	}
}
