package consul

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/shard"
)

func TestEndpoint(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/kv/shardlease/orders/shards/stream/shard-001": "/v1/kv",
		"/v1/txn":                             "/v1/txn",
		"/v1/session/renew/5f4e-...":          "/v1/session/renew",
		"/v1/session/info/5f4e":               "/v1/session/info",
		"/v1/agent/check/update/shardlease-x": "/v1/agent/check/update",
		"/v1/agent/checks":                    "/v1/agent/checks",
		"/v1/status/leader":                   "/v1/status/leader",
	} {
		if got := endpoint(path); got != want {
			t.Errorf("endpoint(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestLockDelayString(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                       "0s",
		time.Nanosecond:         "1ms", // Consul would read "1ns" (< 1000) as one second
		999 * time.Microsecond:  "1ms",
		1500 * time.Millisecond: "1.5s",
		15 * time.Second:        "15s",
	} {
		if got := lockDelayString(d); got != want {
			t.Errorf("lockDelayString(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSanitize(t *testing.T) {
	if got := sanitize("team/w 1:é"); got != "team_w_1__" {
		t.Errorf("sanitize = %q", got)
	}
}

// TestLoopbackAsksNoGzip: requests to a local agent do not ask for a
// compressed answer (Go's transport would add Accept-Encoding: gzip).
func TestLoopbackAsksNoGzip(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Accept-Encoding"))
		w.Header().Set("X-Consul-Index", "1")
		http.NotFound(w, r)
	}))
	defer srv.Close()
	c, err := New(Config{Address: srv.Listener.Addr().String(), Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.kv.Get(t.Context(), "p/config", consulkv.Query{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "" {
		t.Fatalf("Accept-Encoding sent: %q, want none", got)
	}
}

// TestDecodeReusesOwnersByIndex: a shard value is decoded again when its
// key's ModifyIndex moved or its bytes changed, and a malformed one stays
// a problem while it is reused. (That unchanged values are not decoded
// again is measured by BenchmarkDecode in internal/fleetkeys.)
func TestDecodeReusesOwnersByIndex(t *testing.T) {
	c, err := New(Config{Address: "127.0.0.1:1", Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &api.KVPair{Key: "p/config", Value: []byte(`{"shards":2}`), ModifyIndex: 1}
	a := &api.KVPair{Key: "p/shards/" + string(shard.Config{Shards: 2}.Normalize().IDs()[0]), Value: []byte(`{"worker":"w1"}`), ModifyIndex: 5, Session: "s1"}
	b := &api.KVPair{Key: "p/shards/" + string(shard.Config{Shards: 2}.Normalize().IDs()[1]), Value: []byte(`not json`), ModifyIndex: 6, Session: "s2"}
	owner := func(s shard.Snapshot, i int) string { return s.Shards[i].Owner.Worker }

	s1 := c.decode(api.KVPairs{cfg, a, b}, 6)
	if owner(s1, 0) != "w1" || len(s1.Problems) != 1 {
		t.Fatalf("first listing: owner %q, problems %q", owner(s1, 0), s1.Problems)
	}
	// The same index with another value (a Consul restored from a
	// snapshot writes a key again at an index it had used) is decoded
	// again, and the malformed value is still reported...
	a2 := *a
	a2.Value = []byte(`{"worker":"other"}`)
	s2 := c.decode(api.KVPairs{cfg, &a2, b}, 7)
	if owner(s2, 0) != "other" || len(s2.Problems) != 1 {
		t.Fatalf("same index, another value: owner %q, problems %q; want other and the malformed value still reported", owner(s2, 0), s2.Problems)
	}
	a2.Value = []byte(`{"worker":"third"}`)
	// ...and so is a new index.
	a2.ModifyIndex = 8
	s3 := c.decode(api.KVPairs{cfg, &a2, b}, 8)
	if owner(s3, 0) != "third" {
		t.Fatalf("new index: owner %q, want third", owner(s3, 0))
	}
}
