package consul_test

import (
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestBadInput covers what operators and other programs may leave under a
// fleet's prefix, on one dev agent.
func TestBadInput(t *testing.T) {
	agent := consultest.StartDev(t)

	// Foreign and malformed keys, written with the consul CLI: reported in
	// Problems, never members or owners, never a crash.
	t.Run("ForeignAndMalformedKeys", func(t *testing.T) {
		t.Parallel()
		c := newCoordinator(t, agent, nil)
		ctx := t.Context()
		if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 4}); err != nil {
			t.Fatal(err)
		}
		held := newSession(t, c, "w-held", time.Hour, 0)
		acquire(t, c, held, "stream/shard-003")
		if err := c.Members().Join(ctx, held, shard.Member{ID: "w-held", Weight: 1}); err != nil {
			t.Fatal(err)
		}
		p := c.Prefix()
		owner, _ := json.Marshal(shard.Owner{Worker: "intruder", Since: time.Now()})
		puts := map[string]string{
			p + "/foreign":                    "hello",
			p + "/shards/stream/shard-000":    "not json",        // malformed, free
			p + "/shards/stream/shard-003":    "{overwritten",    // malformed, still locked by held
			p + "/shards/not-a-shard":         string(owner),     // valid value, not in the config
			p + "/members/ghost":              "[]",              // malformed member
			p + "/members/impostor":           `{"id":"w-held"}`, // value names another worker
			p + "/offsets/stream/shard-000":   `{"offset":1}`,    // the offsets store's: silent
			p + "/somewhere/deep/in/the/tree": string(owner),
		}
		for k, v := range puts {
			agent.CLI(t, "kv", "put", k, v)
		}

		snap := snapshot(t, c)
		problems := strings.Join(snap.Problems, "\n")
		for _, k := range []string{"/foreign", "/shards/stream/shard-000", "/shards/stream/shard-003", "/shards/not-a-shard",
			"/members/ghost", "/members/impostor", "/somewhere/deep/in/the/tree"} {
			if !strings.Contains(problems, p+k+":") {
				t.Errorf("no problem reported for %s; problems:\n%s", p+k, problems)
			}
		}
		if strings.Contains(problems, "/offsets/") {
			t.Errorf("the offsets store's keys reported as problems:\n%s", problems)
		}
		if len(snap.Members) != 1 || snap.Members[0].ID != "w-held" {
			t.Errorf("members = %+v, want only w-held", snap.Members)
		}
		for _, st := range snap.Shards {
			if st.Owner.Worker == "intruder" || st.Shard == "not-a-shard" {
				t.Errorf("a foreign key became a shard: %+v", st)
			}
		}
		// The overwritten lock is still a lock: shown with its holder.
		if st, ok := snap.Shard("stream/shard-003"); !ok || st.Session != held || st.Owner != (shard.Owner{}) {
			t.Errorf("overwritten held shard = %+v (found %v), want held by %s with the value ignored", st, ok, held)
		}
		// And nobody else gets it; the malformed free one can be taken and
		// its value is repaired.
		other := newSession(t, c, "w-other", time.Hour, 0)
		got := acquire(t, c, other, "stream/shard-000", "stream/shard-003")
		if _, ok := got["stream/shard-003"]; ok || len(got) != 1 {
			t.Fatalf("acquire = %v, want only stream/shard-000", got)
		}
		if st, _ := snapshot(t, c).Shard("stream/shard-000"); st.Owner.Worker != "w-other" {
			t.Errorf("value of the taken shard = %+v, want owner w-other", st.Owner)
		}
		// The holder still renews and releases its shard normally.
		if err := c.Sessions().Renew(ctx, held); err != nil {
			t.Fatal(err)
		}
		if err := c.Locks().Release(ctx, held, shard.ShardLocks([]shard.ID{"stream/shard-003"}), shard.ReasonRebalance); err != nil {
			t.Fatal(err)
		}
		if st, _ := snapshot(t, c).Shard("stream/shard-003"); st.Held() || st.Owner.Released != shard.ReasonRebalance {
			t.Errorf("released overwritten shard = %+v", st)
		}
	})

	t.Run("MalformedStoredConfig", func(t *testing.T) {
		t.Parallel()
		c := newCoordinator(t, agent, nil)
		agent.CLI(t, "kv", "put", c.Prefix()+"/config", "sixty-four")
		_, err := c.Fleet().Configure(t.Context(), shard.Config{Shards: 4})
		if !errors.Is(err, shard.ErrConfigMismatch) || !strings.Contains(err.Error(), "consul kv delete") {
			t.Fatalf("Configure over a malformed config = %v, want ErrConfigMismatch saying how to repair", err)
		}
		if snap := snapshot(t, c); snap.Config != nil || len(snap.Problems) != 1 {
			t.Fatalf("snapshot = config %+v, problems %q; want no config and one problem", snap.Config, snap.Problems)
		}
	})

	// A policy written by hand: one that is not JSON, and one well formed
	// but invalid, are each ignored (no Policy in the snapshot, a problem
	// naming the key); a worker's proposal over it is refused saying how to
	// repair it, and an operator's write replaces it.
	t.Run("PolicyWrittenByHand", func(t *testing.T) {
		t.Parallel()
		c := newCoordinator(t, agent, nil)
		ctx := t.Context()
		if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 4}); err != nil {
			t.Fatal(err)
		}
		for _, value := range []string{"every second", `{"max_moves_in_flight":-3}`, `{"stuck_after":"soon"}`} {
			agent.CLI(t, "kv", "put", c.Prefix()+"/policy", value)
			snap := snapshot(t, c)
			if snap.Policy != nil || len(snap.Problems) != 1 || !strings.Contains(snap.Problems[0], c.Prefix()+"/policy:") {
				t.Fatalf("policy %q: snapshot has policy %v, problems %q; want none and one problem naming the key", value, snap.Policy, snap.Problems)
			}
			_, err := c.Fleet().SetPolicy(ctx, shard.BalancePolicy{}, true)
			if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), "shardctl balance") {
				t.Fatalf("policy %q: proposing over it = %v, want ErrInvalidArgument saying how to repair", value, err)
			}
		}
		want := shard.BalancePolicy{MaxMovesInFlight: 3}
		if _, err := c.Fleet().SetPolicy(ctx, want, false); err != nil {
			t.Fatal(err)
		}
		if snap := snapshot(t, c); snap.Policy == nil || !snap.Policy.Equal(want) || len(snap.Problems) != 0 {
			t.Fatalf("after a write: policy %v, problems %q; want %v and none", snap.Policy, snap.Problems, want)
		}
	})

	// An operator deletes a held shard key: the holder no longer holds it,
	// the next owner's token is still higher, and the holder's release of
	// it is harmless.
	t.Run("OperatorDeletesHeldShard", func(t *testing.T) {
		t.Parallel()
		c := newCoordinator(t, agent, nil)
		a := newSession(t, c, "w-a", time.Hour, 0)
		b := newSession(t, c, "w-b", time.Hour, 0)
		before := acquire(t, c, a, "s-000")["s-000"]
		agent.CLI(t, "kv", "delete", c.Prefix()+"/shards/s-000")
		if _, ok := snapshot(t, c).Shard("s-000"); ok {
			t.Fatal("key still there after consul kv delete")
		}
		after := acquire(t, c, b, "s-000")["s-000"]
		if after <= before {
			t.Fatalf("token after the delete %d, want above %d", after, before)
		}
		if err := c.Locks().Release(t.Context(), a, shard.ShardLocks([]shard.ID{"s-000"}), shard.ReasonRebalance); err != nil {
			t.Fatal(err)
		}
		if st, _ := snapshot(t, c).Shard("s-000"); st.Session != b || st.Token != shard.Token(after) {
			t.Fatalf("s-000 = %+v, want still b's at %d", st, after)
		}
	})
}

// TestUnreachable: a coordinator whose agent refuses connections, or
// accepts them and never answers, fails every call quickly with
// shard.ErrUnavailable and an error that names the address.
func TestUnreachable(t *testing.T) {
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var held []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, conn) // never answered
		}
	}()
	defer func() {
		silent.Close()
		<-accepted
		for _, c := range held {
			c.Close()
		}
	}()

	for _, tc := range []struct {
		name, addr string
		within     time.Duration
		detail     string
	}{
		{"refused", refused, time.Second, "connection refused"},
		{"silent", silent.Addr().String(), 2 * time.Second, "no answer within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := consul.DefaultConfig()
			cfg.Address, cfg.Scheme, cfg.Prefix = tc.addr, "http", "shardlease-test/unreachable"
			cfg.RequestTimeout = 300 * time.Millisecond
			cfg.WatchWait = 300 * time.Millisecond // a stuck blocking query is noticed after 300+18+300 ms
			c, err := consul.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := t.Context()
			calls := map[string]func() error{
				"Configure": func() error { _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 1}); return err },
				"CreateSession": func() error {
					_, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "w", TTL: time.Minute})
					return err
				},
				"Acquire": func() error {
					_, err := c.Locks().Acquire(ctx, "5f4ee3a2-0000-0000-0000-000000000000", []shard.Acquisition{shard.AcquireShard("s", shard.Why{})})
					return err
				},
				"Watch": func() error { _, err := c.Fleet().Watch(ctx, 1); return err },
			}
			for name, call := range calls {
				start := time.Now()
				err := call()
				if d := time.Since(start); d > tc.within {
					t.Errorf("%s took %v, want under %v", name, d, tc.within)
				}
				if !errors.Is(err, shard.ErrUnavailable) {
					t.Errorf("%s = %v, want ErrUnavailable", name, err)
					continue
				}
				t.Logf("%s after %v: %v", name, time.Since(start).Round(time.Millisecond), err)
				if !strings.Contains(err.Error(), tc.addr) || !strings.Contains(err.Error(), tc.detail) {
					t.Errorf("%s error %q does not name the address %s and %q", name, err, tc.addr, tc.detail)
				}
			}
		})
	}
}

// TestPermissionDenied: with ACLs on (default deny), a coordinator without a
// token, or with a read-only one, gets ErrPermissionDenied naming what the
// token needs; never ErrUnavailable (retrying would not help) and never a
// silent empty fleet.
func TestPermissionDenied(t *testing.T) {
	agent := consultest.StartDev(t, consultest.WithACL())
	admin := newCoordinator(t, agent, nil)
	prefix := admin.Prefix()
	ctx := t.Context()
	if _, err := admin.Fleet().Configure(ctx, shard.Config{Shards: 2}); err != nil {
		t.Fatalf("Configure with the management token: %v", err)
	}

	// Read-only on the prefix, but allowed sessions and agent checks.
	acl := agent.Client(t).ACL()
	pol, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "readonly-" + randomName(), Rules: `
key_prefix "` + prefix + `/" { policy = "read" }
session_prefix "" { policy = "write" }
node_prefix "" { policy = "read" }
service "shardlease" { policy = "write" }
`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := acl.TokenCreate(&api.ACLToken{Policies: []*api.ACLTokenPolicyLink{{ID: pol.ID}}}, nil)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("NoToken", func(t *testing.T) {
		c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.Token, cfg.Prefix = "", prefix })
		_, err := c.Fleet().Configure(ctx, shard.Config{Shards: 2})
		wantDenied(t, "Configure", err, prefix)
		_, err = c.Sessions().Create(ctx, shard.SessionSpec{Worker: "w", TTL: time.Minute})
		wantDenied(t, "CreateSession", err, prefix)
		_, err = c.Fleet().Watch(ctx, 0)
		wantDenied(t, "Watch", err, prefix)
	})
	t.Run("ReadOnlyToken", func(t *testing.T) {
		c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.Token, cfg.Prefix = tok.SecretID, prefix })
		if snap, err := c.Fleet().Watch(ctx, 0); err != nil || snap.Config == nil {
			t.Fatalf("Watch with read access = %+v, %v", snap, err)
		}
		sid := newSession(t, c, "w", time.Minute, 0)
		_, err := c.Locks().Acquire(ctx, sid, []shard.Acquisition{shard.AcquireShard("stream/shard-000", shard.Why{})})
		wantDenied(t, "Acquire", err, prefix)
		wantDenied(t, "Join", c.Members().Join(ctx, sid, shard.Member{ID: "w"}), prefix)
	})
}

func wantDenied(t *testing.T, op string, err error, prefix string) {
	t.Helper()
	if !errors.Is(err, consul.ErrPermissionDenied) || !errors.Is(err, shard.ErrPermissionDenied) || errors.Is(err, shard.ErrUnavailable) {
		t.Errorf("%s = %v, want ErrPermissionDenied, also as shard.ErrPermissionDenied (and not ErrUnavailable)", op, err)
		return
	}
	t.Logf("%s: %v", op, err)
	if !strings.Contains(err.Error(), prefix) {
		t.Errorf("%s error %q does not name the prefix %q the token needs", op, err, prefix)
	}
}
