package etcd_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/shard/etcd"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is a client of cluster c, closed on cleanup.
func client(tb testing.TB, c *etcdtest.Cluster) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatalf("clientv3.New: %v", err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// newCoordinator opens a coordinator on a fresh prefix with its own
// client of c, closed on cleanup; edit changes its config first.
func newCoordinator(tb testing.TB, c *etcdtest.Cluster, edit ...func(*etcd.Config)) *etcd.Coordinator {
	tb.Helper()
	cfg := etcd.Config{Client: client(tb, c), Prefix: freshPrefix()}
	for _, e := range edit {
		e(&cfg)
	}
	co, err := etcd.New(cfg)
	if err != nil {
		tb.Fatalf("etcd.New: %v", err)
	}
	tb.Cleanup(co.Close)
	return co
}

// dialCoordinator dials conn (as a command does, through Connection.Dial)
// and opens a coordinator on a fresh prefix with that client; both are
// closed on cleanup.
func dialCoordinator(tb testing.TB, conn etcd.Connection) (*etcd.Coordinator, *clientv3.Client) {
	tb.Helper()
	cli, err := conn.Dial(nil)
	if err != nil {
		tb.Fatalf("Dial: %v", err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	co, err := etcd.New(etcd.Config{Client: cli, Prefix: freshPrefix()})
	if err != nil {
		tb.Fatalf("etcd.New: %v", err)
	}
	tb.Cleanup(co.Close)
	return co, cli
}

func freshPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "shardlease-test/" + hex.EncodeToString(b)
}

// contextWithDeadline is t's context ending at deadline.
func contextWithDeadline(t *testing.T, deadline time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(t.Context(), deadline)
}
