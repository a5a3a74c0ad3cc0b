package docscheck_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets"
	offconsul "github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The names docs/security.md uses in its policies, replaced by the test's.
const (
	docPrefix = "shardlease/orders/"
	docNode   = "worker-host-1"
)

// docFile returns the text of docs/<name>.
func docFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", name))
	if err != nil {
		t.Fatalf("reading docs/%s: %v", name, err)
	}
	return string(b)
}

// docBlock returns the fenced code block that follows the line
// "<!-- acl-test: name -->" in docs/security.md.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	text := docFile(t, "security.md")
	marker := "<!-- acl-test: " + name + " -->"
	_, after, ok := strings.Cut(text, marker)
	if !ok {
		t.Fatalf("docs/security.md has no %q marker: the test applies the block after it", marker)
	}
	_, after, ok = strings.Cut(after, "```hcl\n")
	if !ok {
		t.Fatalf("docs/security.md: no ```hcl block after %q", marker)
	}
	block, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("docs/security.md: the hcl block after %q is not closed", marker)
	}
	return block
}

// rules turns a documented policy into the test's: the document's example
// prefix and node name become the test fleet's.
func rules(t *testing.T, name, prefix, node string) string {
	t.Helper()
	hcl := docBlock(t, name)
	if !strings.Contains(hcl, `"`+docPrefix+`"`) {
		t.Fatalf("the %s policy in docs/security.md does not use the example prefix %q the test replaces:\n%s", name, docPrefix, hcl)
	}
	hcl = strings.ReplaceAll(hcl, docPrefix, prefix+"/")
	return strings.ReplaceAll(hcl, docNode, node)
}

// token creates a policy with the given rules and a token for it.
func token(t *testing.T, admin *api.Client, name, hcl string) string {
	t.Helper()
	pol, _, err := admin.ACL().PolicyCreate(&api.ACLPolicy{Name: name + "-" + randomHex(), Rules: hcl}, nil)
	if err != nil {
		t.Fatalf("creating the %s policy from docs/security.md: %v\n%s", name, err, hcl)
	}
	tok, _, err := admin.ACL().TokenCreate(&api.ACLToken{Policies: []*api.ACLTokenPolicyLink{{ID: pol.ID}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok.SecretID
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func coordinator(t *testing.T, agent *consultest.Agent, tok, prefix string) *consul.Coordinator {
	t.Helper()
	cfg := consul.DefaultConfig()
	cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile, cfg.TLS = agent.HTTPAddr, "http", tok, "", api.TLSConfig{}
	cfg.Prefix = prefix
	c, err := consul.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func client(t *testing.T, agent *consultest.Agent, tok string) *api.Client {
	t.Helper()
	cfg := agent.Config()
	cfg.Token = tok
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cfg.Transport.CloseIdleConnections)
	return c
}

// denied reports whether Consul refused err's request for lack of ACL
// permission (not for any other reason).
func denied(err error) bool {
	if err == nil {
		return false
	}
	var se api.StatusError
	if errors.As(err, &se) && se.Code == 403 {
		return true
	}
	return errors.Is(err, shard.ErrPermissionDenied) || strings.Contains(err.Error(), "Permission denied")
}

// fleet is one worker of a four-shard fleet running with a token.
type fleet struct {
	w      *worker.Worker
	coord  *consul.Coordinator
	cancel context.CancelFunc
	done   chan error

	mu        sync.Mutex
	committed map[shard.ID]shard.Token
	failures  []error
}

var testPolicy = shard.LeasePolicy{TTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second}

// startWorker runs worker w1 with tok; each of its handlers commits an
// offset (to Consul, under the prefix) with its token and holds the shard.
func startWorker(t *testing.T, agent *consultest.Agent, tok, prefix string) *fleet {
	t.Helper()
	f := &fleet{coord: coordinator(t, agent, tok, prefix), done: make(chan error, 1), committed: map[shard.ID]shard.Token{}}
	store, err := offconsul.New(offconsul.Config{Connection: f.coord.Connection(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	w, err := worker.New(worker.Config{
		ID: "w1", Fleet: shard.Config{Shards: 4}, Coordinator: f.coord, Offsets: store,
		Policy: testPolicy,
		Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			err := c.Commit(ctx, c.Start.Offset+1)
			f.mu.Lock()
			if err != nil {
				f.failures = append(f.failures, err)
			} else {
				f.committed[c.Shard] = c.Token
			}
			f.mu.Unlock()
			<-ctx.Done()
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() { f.done <- w.Run(ctx) }()
	t.Cleanup(func() { f.stop(t) })
	return f
}

// stop stops the worker gracefully and returns Run's error.
func (f *fleet) stop(t *testing.T) error {
	if f.cancel == nil {
		return nil
	}
	f.cancel()
	f.cancel = nil
	select {
	case err := <-f.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop within 30s")
		return nil
	}
}

// awaitCommits waits until every shard's handler has committed, or fails
// the test with what the worker ran into.
func (f *fleet) awaitCommits(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		n, failures := len(f.committed), append([]error(nil), f.failures...)
		f.mu.Unlock()
		if n == 4 {
			return
		}
		select {
		case err := <-f.done:
			t.Fatalf("the worker stopped with the documented policy: %v (commit failures: %v)", err, failures)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s %d of 4 shards committed with the documented worker policy; commit failures: %v; worker status: %+v",
				n, failures, f.w.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDocumentedACLPolicies applies docs/security.md's policies to a
// Consul with ACLs on and default deny.
func TestDocumentedACLPolicies(t *testing.T) {
	agent := consultest.StartDev(t, consultest.WithACL())
	admin := agent.Client(t)
	prefix := "shardlease-acl/" + randomHex()
	workerTok := token(t, admin, "worker", rules(t, "worker", prefix, agent.Name))

	f := startWorker(t, agent, workerTok, prefix)
	t.Run("WorkerRunsWithItsPolicy", func(t *testing.T) {
		f.awaitCommits(t)
		pairs, _, err := admin.KV().List(prefix+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		var held, offsets int
		for _, kv := range pairs {
			switch {
			case strings.HasPrefix(kv.Key, prefix+"/shards/") && kv.Session != "":
				held++
			case strings.HasPrefix(kv.Key, prefix+"/offsets/"):
				offsets++
			}
		}
		if held != 4 || offsets != 4 {
			t.Errorf("under %s: %d shard locks held, %d offsets keys; want 4 and 4", prefix, held, offsets)
		}
	})

	t.Run("WorkerCannotWriteOutsideItsPrefix", func(t *testing.T) {
		c := client(t, agent, workerTok)
		sibling := prefix + "-archive/config" // shares the prefix's first characters, not its slash
		attempts := map[string]func() error{
			"put a key of another fleet": func() error {
				_, err := c.KV().Put(&api.KVPair{Key: "shardlease-acl/other-fleet/config", Value: []byte("{}")}, nil)
				return err
			},
			"put " + sibling: func() error {
				_, err := c.KV().Put(&api.KVPair{Key: sibling, Value: []byte("{}")}, nil)
				return err
			},
			"put the prefix key itself": func() error {
				_, err := c.KV().Put(&api.KVPair{Key: prefix, Value: []byte("x")}, nil)
				return err
			},
			"delete every key": func() error {
				_, err := c.KV().DeleteTree("", nil)
				return err
			},
			"create a session on another node": func() error {
				_, _, err := c.Session().Create(&api.SessionEntry{Node: "not-" + agent.Name, Checks: []string{}}, nil)
				return err
			},
			"register another service": func() error {
				return c.Agent().ServiceRegister(&api.AgentServiceRegistration{Name: "billing", ID: "billing-1"})
			},
			"read the ACL tokens": func() error {
				_, _, err := c.ACL().TokenList(nil)
				return err
			},
			"configure a fleet under another prefix": func() error {
				_, err := coordinator(t, agent, workerTok, "shardlease-acl/other-fleet").Fleet().Configure(t.Context(), shard.Config{Shards: 4})
				return err
			},
		}
		for what, try := range attempts {
			if err := try(); !denied(err) {
				t.Errorf("%s with the worker's token: %v; want an ACL refusal", what, err)
			} else {
				t.Logf("%s: refused: %v", what, err)
			}
		}
		for _, k := range []string{"shardlease-acl/other-fleet/config", sibling, prefix} {
			if kv, _, err := admin.KV().Get(k, nil); err != nil || kv != nil {
				t.Errorf("key %s exists after the refusals (%v)", k, err)
			}
		}
		if svcs, err := admin.Agent().Services(); err != nil || svcs["billing-1"] != nil {
			t.Errorf("service billing-1 registered with the worker's token (%v)", err)
		}
	})

	t.Run("EveryWorkerRuleIsNeeded", func(t *testing.T) {
		blocks := ruleBlocks(rules(t, "worker", prefix, agent.Name))
		if len(blocks) < 2 {
			t.Fatalf("the worker policy has %d rule blocks; the test expected several:\n%v", len(blocks), blocks)
		}
		for i, dropped := range blocks {
			rest := strings.Join(append(append([]string(nil), blocks[:i]...), blocks[i+1:]...), "\n")
			tok := token(t, admin, "worker-minus", rest)
			w, err := worker.New(worker.Config{
				ID: "w-minus", Fleet: shard.Config{Shards: 4}, Coordinator: coordinator(t, agent, tok, prefix),
				Offsets: nopStore{}, Policy: testPolicy,
				Handler: worker.HandlerFunc(func(ctx context.Context, _ *worker.Claim) error { <-ctx.Done(); return nil }),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			err = w.Run(ctx)
			cancel()
			name, _, _ := strings.Cut(strings.TrimSpace(dropped), "{")
			if !errors.Is(err, shard.ErrPermissionDenied) {
				t.Errorf("without %s the worker ran (Run = %v): the rule is not needed, or the refusal is not reported", name, err)
				continue
			}
			t.Logf("without %s: %v", name, err)
		}
	})

	snap, err := coordinator(t, agent, agent.Token, prefix).Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	member, _ := snap.Member("w1")
	owned := snap.Shards[0]

	t.Run("ReaderPolicy", func(t *testing.T) {
		c := coordinator(t, agent, token(t, admin, "reader", rules(t, "reader", prefix, agent.Name)), prefix)
		s, err := c.Fleet().Watch(t.Context(), 0)
		if err != nil || s.Config == nil || len(s.Owners()) != 4 || len(s.Problems) != 0 {
			t.Fatalf("watch with the reader policy: %d owners, config %v, problems %v, err %v; want the whole fleet", len(s.Owners()), s.Config, s.Problems, err)
		}
		m := member.Member
		m.Draining = true
		if err := c.Members().Join(t.Context(), member.Session, m); !denied(err) {
			t.Errorf("drain with the reader policy: %v; want an ACL refusal", err)
		}
		if err := c.Locks().Release(t.Context(), owned.Session, shard.ShardLocks([]shard.ID{owned.Shard}), "test"); !denied(err) {
			t.Errorf("release with the reader policy: %v; want an ACL refusal", err)
		}
	})

	t.Run("OperatorPolicy", func(t *testing.T) {
		opTok := token(t, admin, "operator", rules(t, "operator", prefix, agent.Name))
		c := coordinator(t, agent, opTok, prefix)
		m := member.Member
		m.Draining = true
		if err := c.Members().Join(t.Context(), member.Session, m); err != nil {
			t.Errorf("drain (the worker's member key, with its session) with the operator policy: %v", err)
		}
		m.Draining = false
		if err := c.Members().Join(t.Context(), member.Session, m); err != nil {
			t.Errorf("undrain with the operator policy: %v", err)
		}
		if err := c.Locks().Release(t.Context(), owned.Session, shard.ShardLocks([]shard.ID{owned.Shard}), "forced free by the ACL test"); err != nil {
			t.Errorf("release %s with the operator policy: %v", owned.Shard, err)
		}
		if _, err := c.Sessions().Create(t.Context(), shard.SessionSpec{Worker: "operator", TTL: 10 * time.Second}); !denied(err) {
			t.Errorf("create a session with the operator policy: %v; want an ACL refusal (operators hold no locks)", err)
		}
		if _, err := client(t, agent, opTok).KV().Put(&api.KVPair{Key: "shardlease-acl/other-fleet/x", Value: []byte("x")}, nil); !denied(err) {
			t.Errorf("put outside the prefix with the operator policy: %v; want an ACL refusal", err)
		}
	})

	t.Run("WorkerStopsCleanly", func(t *testing.T) {
		if err := f.stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
		pairs, _, err := admin.KV().List(prefix+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range pairs {
			if kv.Session != "" {
				t.Errorf("%s still held by session %s after a graceful stop", kv.Key, kv.Session)
			}
		}
		svcs, err := admin.Agent().Services()
		if err != nil {
			t.Fatal(err)
		}
		for id, s := range svcs {
			if s.Service == consul.ServiceName {
				t.Errorf("session check service %s left registered after a graceful stop", id)
			}
		}
	})
}

// ruleBlocks splits a policy into its top-level rule blocks (comments
// dropped): `key_prefix "x/" { policy = "write" }` and the like.
func ruleBlocks(hcl string) []string {
	var blocks []string
	var cur []string
	for _, line := range strings.Split(hcl, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		cur = append(cur, line)
		if trimmed == "}" || (strings.HasSuffix(trimmed, "}") && strings.Contains(trimmed, "{")) {
			blocks = append(blocks, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	return blocks
}

// nopStore is an offsets store that accepts everything: the workers that
// run without a rule never get as far as a claim.
type nopStore struct{}

func (nopStore) Fence(context.Context, shard.ID, shard.Token) error         { return nil }
func (nopStore) Commit(context.Context, shard.ID, shard.Token, int64) error { return nil }
func (nopStore) Load(context.Context, shard.ID) (offsets.Checkpoint, error) {
	return offsets.Checkpoint{}, nil
}
func (nopStore) Close() error { return nil }
