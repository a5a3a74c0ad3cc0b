package consul_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/offsets/offsetstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newStore opens a store on agent a under prefix, closed on cleanup.
func newStore(tb testing.TB, a *consultest.Agent, prefix string) *consul.Store {
	tb.Helper()
	st, err := consul.New(consul.Config{Client: a.Client(tb), Address: a.HTTPAddr, Prefix: prefix})
	if err != nil {
		tb.Fatalf("consul.New: %v", err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// opener returns an OpenFunc that opens each store under a fresh prefix.
func opener(a *consultest.Agent) offsetstest.OpenFunc {
	return func(tb testing.TB) offsets.Store { return newStore(tb, a, freshPrefix()) }
}

func freshPrefix() string { return "shardlease-test/" + randomHex(6) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
