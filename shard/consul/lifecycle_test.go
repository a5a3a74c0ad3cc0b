package consul_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestLifecycle covers what Consul adds to the suite's cases: health checks
// behind sessions, dead member collection, lock-delay on member keys, and
// the number of requests per operation. One dev agent, parallel subtests.
func TestLifecycle(t *testing.T) {
	agent := consultest.StartDev(t)
	client := agent.Client(t)

	checkIDs := func(t *testing.T) map[string]*api.AgentCheck {
		t.Helper()
		checks, err := client.Agent().Checks()
		if err != nil {
			t.Fatal(err)
		}
		return checks
	}
	checkOf := func(t *testing.T, sid shard.SessionID) string {
		t.Helper()
		e, _, err := client.Session().Info(string(sid), nil)
		if err != nil || e == nil {
			t.Fatalf("session %s: %v, %v", sid, e, err)
		}
		for _, ch := range e.ServiceChecks {
			if strings.HasPrefix(ch.ID, consul.CheckIDPrefix) {
				return ch.ID
			}
		}
		t.Fatalf("session %s is bound to no shardlease service check: %+v", sid, e.ServiceChecks)
		return ""
	}

	t.Run("CheckBoundSession", func(t *testing.T) {
		t.Parallel()
		c := newCoordinator(t, agent, nil)
		ctx := t.Context()
		sid, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "w/1", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := client.Session().Info(string(sid), nil)
		if err != nil || e == nil {
			t.Fatal(err)
		}
		check := checkOf(t, sid)
		if e.Behavior != api.SessionBehaviorRelease || e.LockDelay != 0 || e.TTL != "" || e.Name != "w/1" ||
			!strings.Contains(strings.Join(e.NodeChecks, ","), "serfHealth") {
			t.Fatalf("session = %+v, want release, no lock-delay, no TTL, named w/1, bound to serfHealth and its check", e)
		}
		if ch := checkIDs(t)[check]; ch == nil || ch.Status != api.HealthPassing || ch.ServiceName != consul.ServiceName {
			t.Fatalf("check %s = %+v, want registered, passing, on service %s", check, ch, consul.ServiceName)
		}
		if err := c.Sessions().Renew(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if err := c.Sessions().Destroy(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if ch := checkIDs(t)[check]; ch != nil {
			t.Fatalf("check %s still registered after DestroySession", check)
		}
		if svcs, _ := client.Agent().Services(); svcs[check] != nil {
			t.Fatalf("service instance %s still registered after DestroySession", check)
		}
	})

	// The session's check deregistered from under it (an agent restart
	// without persistence, an operator): renewal reports the loss.
	t.Run("CheckDeregisteredFromUnderTheSession", func(t *testing.T) {
		t.Parallel()
		c := newCoordinator(t, agent, nil)
		sid := newSession(t, c, "w", time.Minute, 0)
		acquire(t, c, sid, "s-000")
		if err := client.Agent().ServiceDeregister(checkOf(t, sid)); err != nil {
			t.Fatal(err)
		}
		err := c.Sessions().Renew(t.Context(), sid)
		if !errors.Is(err, shard.ErrSessionInvalid) {
			t.Fatalf("RenewSession = %v, want ErrSessionInvalid", err)
		}
		if st, _ := snapshot(t, c).Shard("s-000"); st.Held() {
			t.Fatalf("s-000 still held after its session's check was removed: %+v", st)
		}
	})

	// A crashed worker: its session's check goes critical, Consul drops the
	// session, and the next Sessions.Create on the agent removes the check.
	t.Run("CrashedWorkersCheckIsReaped", func(t *testing.T) {
		t.Parallel()
		crashed := newCoordinator(t, agent, nil)
		sid, err := crashed.Sessions().Create(t.Context(), shard.SessionSpec{Worker: "crashed", TTL: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stale := checkOf(t, sid)
		deadline := time.Now().Add(10 * time.Second)
		for {
			// The agent sees its check critical first; the servers drop the
			// session when the agent syncs that status a moment later. A
			// parallel subtest's Sessions.Create may already have reaped the
			// critical check (ch == nil): that is the outcome we want too.
			ch := checkIDs(t)[stale]
			e, _, err := client.Session().Info(string(sid), nil)
			if err == nil && e == nil && (ch == nil || ch.Status == api.HealthCritical) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("10 s after a check TTL of 500 ms: check %s = %+v, session = %+v, %v", stale, ch, e, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Only its own service instance is critical: the node's checks,
		// which every other service on the node depends on, are not.
		nodeChecks, _, err := client.Health().Node(agent.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range nodeChecks {
			if ch.ServiceID == "" && ch.Status != api.HealthPassing {
				t.Errorf("node-level check %s is %s after a worker crashed", ch.CheckID, ch.Status)
			}
		}
		c := newCoordinator(t, agent, nil)
		newSession(t, c, "next", time.Minute, 0)
		if ch := checkIDs(t)[stale]; ch != nil {
			t.Fatalf("stale check %s not reaped by the next CreateSession: %+v", stale, ch)
		}
		if err := crashed.Sessions().Renew(t.Context(), sid); !errors.Is(err, shard.ErrSessionInvalid) {
			t.Fatalf("the crashed worker's renewal = %v, want ErrSessionInvalid", err)
		}
	})

	// Dead member keys go after the grace period, deleted by a watcher
	// with their loads keys; a key re-joined in between is left alone,
	// loads key too, and a loads key without a member key goes at once.
	t.Run("DeadMembersCollected", func(t *testing.T) {
		t.Parallel()
		const grace = time.Second
		c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.MemberGrace = grace })
		ctx := t.Context()
		a := newSession(t, c, "a", time.Minute, 0)
		b := newSession(t, c, "b", time.Minute, 0)
		for _, id := range []string{"gone", "back"} {
			if err := c.Members().Join(ctx, a, shard.Member{ID: id}); err != nil {
				t.Fatal(err)
			}
			if err := c.Members().ReportLoad(ctx, a, id, map[shard.ID]float64{"s": 1}); err != nil {
				t.Fatal(err)
			}
		}
		kv := consul.APIClient(c).KV()
		if _, err := kv.Put(&api.KVPair{Key: c.Prefix() + "/loads/orphan", Value: []byte(`{}`)}, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Sessions().Destroy(ctx, a); err != nil {
			t.Fatal(err)
		}
		if p, _, err := kv.Get(c.Prefix()+"/loads/gone", nil); err != nil || p == nil || p.Session != "" {
			t.Fatalf("loads key of a destroyed session = %+v, %v; want it kept, unlocked", p, err)
		}
		snap := snapshot(t, c) // starts the grace: both dead
		for _, id := range []string{"gone", "back"} {
			if m, ok := snap.Member(id); !ok || m.Live() {
				t.Fatalf("%s right after its session ended = %+v (found %v), want dead", id, m, ok)
			}
		}
		if err := c.Members().Join(ctx, b, shard.Member{ID: "back"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, grace+5*time.Second)
		defer cancel()
		idx := snap.Index
		for {
			s, err := c.Fleet().Watch(wctx, idx)
			if err != nil {
				t.Fatalf("dead member not collected within %v: %v", grace+5*time.Second, err)
			}
			if _, ok := s.Member("gone"); !ok {
				if d := time.Since(start); d < grace-100*time.Millisecond {
					t.Fatalf("collected after %v, before the grace of %v", d, grace)
				}
				if m, ok := s.Member("back"); !ok || m.Session != b {
					t.Fatalf("re-joined member = %+v (found %v), want kept, held by %s", m, ok, b)
				}
				for id, want := range map[string]bool{"gone": false, "back": true, "orphan": false} {
					if p, _, err := kv.Get(c.Prefix()+"/loads/"+id, nil); err != nil || (p != nil) != want {
						t.Fatalf("loads key of %s after the collection: %+v, %v; want present: %v", id, p, err, want)
					}
				}
				break
			}
			idx = shard.NextIndex(idx, s.Index)
		}
	})

	// A dead member key whose worker said it will be back by RejoinUntil,
	// later than the grace, stays until then.
	t.Run("ReturningMemberKeptUntilRejoinUntil", func(t *testing.T) {
		t.Parallel()
		const grace, rejoin = 500 * time.Millisecond, 3 * time.Second
		c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.MemberGrace = grace })
		ctx := t.Context()
		a := newSession(t, c, "a", time.Minute, 0)
		until := time.Now().Add(rejoin)
		if err := c.Members().Join(ctx, a, shard.Member{ID: "returning", RejoinUntil: until}); err != nil {
			t.Fatal(err)
		}
		if err := c.Sessions().Destroy(ctx, a); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, rejoin+5*time.Second)
		defer cancel()
		idx := snapshot(t, c).Index
		for {
			s, err := c.Fleet().Watch(wctx, idx)
			if err != nil {
				t.Fatalf("returning member not collected within %v of its RejoinUntil: %v", 5*time.Second, err)
			}
			if _, ok := s.Member("returning"); !ok {
				if time.Now().Before(until) {
					t.Fatalf("returning member collected %v before its RejoinUntil (grace %v)", time.Until(until), grace)
				}
				break
			}
			idx = shard.NextIndex(idx, s.Index)
		}
	})

	// Consul puts member keys under lock-delay too: a worker restarting at
	// once after a crash is told to retry (ErrUnavailable), not that its ID
	// is taken.
	t.Run("JoinInsideMemberLockDelay", func(t *testing.T) {
		t.Parallel()
		c := newCoordinator(t, agent, nil)
		ctx := t.Context()
		old, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "w", TTL: 500 * time.Millisecond, LockDelay: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Members().Join(ctx, old, shard.Member{ID: "w"}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if m, _ := snapshot(t, c).Member("w"); !m.Live() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("member still live 10 s after its session's check TTL of 500 ms")
			}
			time.Sleep(100 * time.Millisecond)
		}
		again := newSession(t, c, "w", time.Minute, 0)
		err = c.Members().Join(ctx, again, shard.Member{ID: "w"})
		if !errors.Is(err, shard.ErrUnavailable) || !strings.Contains(err.Error(), "lock-delay") {
			t.Fatalf("Join inside lock-delay = %v, want ErrUnavailable naming the lock-delay", err)
		}
	})

	// Requests per operation, counted by a RequestCounter: renewal cost does
	// not depend on the number of shards owned.
	t.Run("RequestCounts", func(t *testing.T) {
		t.Parallel()
		for _, mode := range []consul.Liveness{consul.LivenessCheck, consul.LivenessTTL} {
			var rc consul.RequestCounter
			var lists atomic.Int64 // reads of keys with their values (?recurse): the locks' listing
			wrap := func(next http.RoundTripper) http.RoundTripper {
				return rc.Wrap(roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if r.Method == http.MethodGet && r.URL.Query().Has("recurse") {
						lists.Add(1)
					}
					return next.RoundTrip(r)
				}))
			}
			c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.Liveness, cfg.WrapTransport = mode, wrap })
			ctx := t.Context()
			cfg, err := c.Fleet().Configure(ctx, shard.Config{Shards: 150})
			if err != nil {
				t.Fatal(err)
			}
			sid := newSession(t, c, "w", 10*time.Second, 0)

			rc.Reset()
			if got := acquire(t, c, sid, cfg.IDs()...); len(got) != 150 {
				t.Fatalf("acquired %d", len(got))
			}
			// Two reads (128 + 22 keys) and three locks (64 + 64 + 22).
			if n := rc.Counts()["PUT /v1/txn"]; n != 5 || rc.Total() != 5 {
				t.Errorf("%s: acquiring 150 shards took %v, want 5 transactions", mode, rc.Counts())
			}

			rc.Reset()
			if err := c.Sessions().Renew(ctx, sid); err != nil {
				t.Fatal(err)
			}
			want := map[consul.Liveness]map[string]int64{
				consul.LivenessCheck: {"PUT /v1/agent/check/update": 1, "GET /v1/session/info": 1},
				consul.LivenessTTL:   {"PUT /v1/session/renew": 1},
			}[mode]
			if got := rc.Counts(); !equalCounts(got, want) {
				t.Errorf("%s: one renewal holding 150 shards = %v, want %v", mode, got, want)
			}

			// A first watch: the names below the prefix, the locks, and
			// the rest in one transaction.
			rc.Reset()
			lists.Store(0)
			snap, err := c.Fleet().Watch(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			read := map[string]int64{"GET /v1/kv": 2, "PUT /v1/txn": 1}
			if got := rc.Counts(); !equalCounts(got, read) || lists.Load() != 1 {
				t.Errorf("%s: one watch = %v with %d lists, want %v with one", mode, got, lists.Load(), read)
			}
			// A fresh watch on the same coordinator with nothing changed
			// (an observer's new follow) probes the locks' index instead.
			rc.Reset()
			lists.Store(0)
			if _, err := c.Fleet().Watch(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if got := rc.Counts(); !equalCounts(got, read) || lists.Load() != 0 {
				t.Errorf("%s: a second fresh watch = %v with %d lists, want %v with none", mode, got, lists.Load(), read)
			}
			// A change that touches no lock (a member's mark) does not
			// read the 150 locks again: a probe of their index instead.
			if err := c.Members().Join(ctx, sid, shard.Member{ID: "w", Draining: true}); err != nil {
				t.Fatal(err)
			}
			rc.Reset()
			lists.Store(0)
			next, err := c.Fleet().Watch(ctx, snap.Index)
			if err != nil {
				t.Fatal(err)
			}
			if got := rc.Counts(); !equalCounts(got, read) || lists.Load() != 0 {
				t.Errorf("%s: a watch after a member's change = %v with %d lists, want %v with none", mode, got, lists.Load(), read)
			}
			if len(next.Members) != 1 || !next.Members[0].Draining || len(next.Shards) != 150 || next.Shards[0].Session != sid {
				t.Errorf("%s: after a member's change the snapshot has members %+v and %d shards (first %+v), want w draining and 150 held",
					mode, next.Members, len(next.Shards), next.Shards[0])
			}
			// A change of a lock reads them again.
			if err := c.Locks().Release(ctx, sid, shard.ShardLocks(cfg.IDs()[:1]), shard.ReasonRebalance); err != nil {
				t.Fatal(err)
			}
			rc.Reset()
			lists.Store(0)
			last, err := c.Fleet().Watch(ctx, next.Index)
			if err != nil {
				t.Fatal(err)
			}
			relisted := map[string]int64{"GET /v1/kv": 3, "PUT /v1/txn": 1}
			if got := rc.Counts(); !equalCounts(got, relisted) || lists.Load() != 1 {
				t.Errorf("%s: a watch after a release = %v with %d lists, want %v with one", mode, got, lists.Load(), relisted)
			}
			if st, _ := last.Shard(cfg.IDs()[0]); st.Session != "" {
				t.Errorf("%s: a released shard still shows held by %q", mode, st.Session)
			}
		}
	})
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
