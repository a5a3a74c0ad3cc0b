package consul_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestAcquireFailingMidway: an Acquire of more shards than one transaction
// takes whose second lock transaction never reaches Consul returns the
// first transaction's claims with the error. Those shards are locked by
// the session; a worker that did not get their claims would hold them
// without running them until its next look.
func TestAcquireFailingMidway(t *testing.T) {
	agent := consultest.StartDev(t)
	refused := errors.New("connection reset by the test")
	var (
		mu    sync.Mutex
		locks int
	)
	failSecondLock := func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPut || r.URL.Path != "/v1/txn" || r.Body == nil {
				return next.RoundTrip(r)
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"Verb":"lock"`)) {
				mu.Lock()
				locks++
				n := locks
				mu.Unlock()
				if n == 2 {
					return nil, refused
				}
			}
			return next.RoundTrip(r)
		})
	}
	c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.WrapTransport = failSecondLock })
	const n = consul.MaxTxnShards + 10
	cfg, err := c.Fleet().Configure(t.Context(), shard.Config{Shards: n})
	if err != nil {
		t.Fatal(err)
	}
	sid := newSession(t, c, "w", 10*time.Second, 0)
	grants, err := c.Locks().Acquire(t.Context(), sid, wantOf(cfg.IDs()...))
	claims := shard.Claims(grants)
	if !errors.Is(err, shard.ErrUnavailable) {
		t.Fatalf("Acquire with its second lock transaction refused = %v, want ErrUnavailable", err)
	}
	if len(claims) != consul.MaxTxnShards {
		t.Fatalf("Acquire returned %d claims with its error, want the first transaction's %d", len(claims), consul.MaxTxnShards)
	}
	kv := agent.Client(t).KV()
	for i, cl := range claims {
		pair, _, err := kv.Get(c.Prefix()+"/shards/"+string(cl.Shard), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cl.Shard != cfg.IDs()[i] || pair == nil || pair.Session != string(sid) || cl.Token != shard.Token(pair.ModifyIndex) {
			t.Fatalf("claim %d = %+v; Consul has %+v, want shard %s held by %s with the claim's token as ModifyIndex", i, cl, pair, cfg.IDs()[i], sid)
		}
	}
	for _, id := range cfg.IDs()[consul.MaxTxnShards:] {
		if st, ok := snapshot(t, c).Shard(id); ok && st.Held() {
			t.Fatalf("%s of the refused transaction is held: %+v", id, st)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
