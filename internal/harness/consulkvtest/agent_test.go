package consulkvtest_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/harness/consulkvtest"
	"github.com/shardlease/shardlease/internal/harness/consultest"
)

// TestAgentConformance runs the twin's cases against a real agent.
func TestAgentConformance(t *testing.T) {
	client := dialAgent(t)
	conformance(t, backend{
		kv:     consulkv.New(client),
		prefix: "consulkv-test/" + randomHex(6),
		newSession: func(t *testing.T) string {
			id, _, err := client.Session().Create(&api.SessionEntry{Behavior: api.SessionBehaviorRelease, LockDelay: 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = client.Session().Destroy(id, nil) })
			return id
		},
	})
}

// TestAgentRefusesTooMany: Consul refuses a transaction of more than
// MaxTxnOps operations with the status Classify reads as refused, as the
// twin and Client (which does not send it) do.
func TestAgentRefusesTooMany(t *testing.T) {
	client := dialAgent(t)
	ops := make(api.TxnOps, consulkv.MaxTxnOps+1)
	for i := range ops {
		ops[i] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetOrEmpty, Key: "k"}}
	}
	_, err := client.Raw().Write("/v1/txn", ops, nil, nil)
	var se api.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusRequestEntityTooLarge || consulkv.Classify(err, true) != consulkv.KindRefused {
		t.Fatalf("the agent's answer to %d operations = %v; want HTTP 413, refused", len(ops), err)
	}
	for name, kv := range map[string]consulkv.KV{"client": consulkv.New(client), "twin": consulkvtest.NewTwin()} {
		_, _, err := kv.Txn(t.Context(), ops)
		if !errors.As(err, &se) || se.Code != http.StatusRequestEntityTooLarge || consulkv.Classify(err, true) != consulkv.KindRefused {
			t.Errorf("%s: %d operations = %v; want HTTP 413, refused", name, len(ops), err)
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// dialAgent starts an agent and returns a client of it, as Dial builds it.
func dialAgent(t *testing.T) *api.Client {
	a := consultest.StartDev(t)
	client, transport, err := consulkv.Dial(consulkv.Connection{Address: a.HTTPAddr, Token: a.Token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(transport.CloseIdleConnections)
	return client
}
