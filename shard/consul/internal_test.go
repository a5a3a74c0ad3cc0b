package consul

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

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

// TestClassifyTxnError pins the Consul 1.14 texts the coordinator reads.
func TestClassifyTxnError(t *testing.T) {
	for what, want := range map[string]txnRefusal{
		`failed to lock key "p/shards/a", lock is already held`:                                 refusedHeld,
		`failed to lock key "p/shards/b" due to lock delay`:                                     refusedLockDelay,
		`failed to unlock key "p/shards/a", lock isn't held, or is held by another session`:     refusedNotHeld,
		`invalid session "bogus"`:                                                               refusedBadSession,
		`Permission denied: token with AccessorID '0002' lacks permission 'key:write' on "p/x"`: refusedPermission,
		`failed to delete key "p/members/w", index is stale`:                                    refusedStaleIndex,
		`key "p/shards/a" doesn't exist`:                                                        refusedKeyMissing,
		`something new`:                                                                         refusedOther,
	} {
		if got := classifyTxnError(what); got != want {
			t.Errorf("classifyTxnError(%q) = %d, want %d", what, got, want)
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

func TestLocalAgent(t *testing.T) {
	for address, want := range map[string]bool{
		"127.0.0.1:8500":          true,
		"127.0.0.2:8500":          true,
		"localhost:8500":          true,
		"[::1]:8500":              true,
		"http://127.0.0.1:8500":   true,
		"https://localhost:8501":  true,
		"unix:///var/consul.sock": true,
		"10.0.0.5:8500":           false,
		"consul.service:8500":     false,
		"https://consul.example":  false,
		"192.168.1.1":             false,
	} {
		if got := localAgent(address); got != want {
			t.Errorf("localAgent(%q) = %v, want %v", address, got, want)
		}
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
	if _, _, err := c.Client().KV().Get("p/config", nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "" {
		t.Fatalf("Accept-Encoding sent: %q, want none", got)
	}
}

// TestDecodeReusesOwnersByIndex: a shard value is decoded again only when
// its key's ModifyIndex moved, and a malformed one stays a problem while
// it is reused.
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
	// The same index with another value (which Consul never does) shows
	// the value is not decoded again...
	a2 := *a
	a2.Value = []byte(`{"worker":"other"}`)
	s2 := c.decode(api.KVPairs{cfg, &a2, b}, 7)
	if owner(s2, 0) != "w1" || len(s2.Problems) != 1 {
		t.Fatalf("same index: owner %q, problems %q; want the cached w1 and the malformed value still reported", owner(s2, 0), s2.Problems)
	}
	// ...and a new index is.
	a2.ModifyIndex = 8
	s3 := c.decode(api.KVPairs{cfg, &a2, b}, 8)
	if owner(s3, 0) != "other" {
		t.Fatalf("new index: owner %q, want other", owner(s3, 0))
	}
}

// TestTxnBatches: operations are split into transactions of at most maxOps
// (the head included) and maxBytes of JSON body, in order, each opened by
// the head; an operation too large on its own travels alone.
func TestTxnBatches(t *testing.T) {
	head := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: "p/assignor", Session: "s"}}}
	op := func(key string, size int) *api.TxnOp {
		return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: make([]byte, size)}}
	}
	body := func(ops api.TxnOps) int {
		b, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	for _, tc := range []struct {
		name      string
		ops       []*api.TxnOp
		maxOps    int
		maxBytes  int
		wantSizes []int // operations per transaction, head excluded
	}{
		{"none", nil, 4, 1 << 20, nil},
		{"by count", []*api.TxnOp{op("a", 1), op("b", 1), op("c", 1), op("d", 1), op("e", 1), op("f", 1), op("g", 1)}, 4, 1 << 20, []int{3, 3, 1}},
		{"by size", []*api.TxnOp{op("a", 300), op("b", 300), op("c", 300), op("d", 300)}, 128, 1400, []int{2, 2}},
		{"too large alone", []*api.TxnOp{op("a", 10), op("big", 5000), op("c", 10)}, 128, 1000, []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batches, err := txnBatches(head, tc.ops, tc.maxOps, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int
			var sent []*api.TxnOp
			for _, b := range batches {
				if b[0] != head[0] {
					t.Fatalf("a transaction opens with %+v, not the head", b[0].KV)
				}
				if len(b) > tc.maxOps || (len(b) > 2 && body(b) > tc.maxBytes) {
					t.Fatalf("a transaction of %d operations, %d bytes: over %d, %d", len(b), body(b), tc.maxOps, tc.maxBytes)
				}
				sizes = append(sizes, len(b)-1)
				sent = append(sent, b[1:]...)
			}
			if !slices.Equal(sizes, tc.wantSizes) || !slices.Equal(sent, tc.ops) {
				t.Fatalf("operations per transaction %v, want %v, all in order", sizes, tc.wantSizes)
			}
		})
	}
}
