package etcd_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/etcd"
	"github.com/shardlease/shardlease/offsets/offsetstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is a client of cluster c, closed on cleanup.
func client(tb testing.TB, c *etcdtest.Cluster) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		tb.Fatalf("clientv3.New: %v", err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// newStore opens a store with its own client of c under prefix.
func newStore(tb testing.TB, c *etcdtest.Cluster, prefix string) *etcd.Store {
	tb.Helper()
	st, err := etcd.New(etcd.Config{Client: client(tb, c), Prefix: prefix})
	if err != nil {
		tb.Fatalf("etcd.New: %v", err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// opener returns an OpenFunc that opens each store under a fresh prefix.
func opener(c *etcdtest.Cluster) offsetstest.OpenFunc {
	return func(tb testing.TB) offsets.Store { return newStore(tb, c, freshPrefix()) }
}

func freshPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "shardlease-test/" + hex.EncodeToString(b)
}
