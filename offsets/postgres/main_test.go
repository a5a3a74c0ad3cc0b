package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/pgtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

// TestMain: one PostgreSQL cluster for the package (pgtest.Shared), stopped
// after the tests; then no goroutine may be left.
func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// database returns the DSN of a fresh database on the shared cluster.
func database(t testing.TB) string {
	t.Helper()
	return pgtest.Shared(t).NewDatabase(t)
}

// opener returns an OpenFunc on dsn that opens each store on a fresh table,
// as offsetstest.Run wants a fresh namespace per open.
func opener(dsn string) offsetstest.OpenFunc {
	return func(tb testing.TB) offsets.Store {
		tb.Helper()
		return openTable(tb, dsn, "offsets_"+randomHex(6))
	}
}

// openTable opens a store on table and closes it on cleanup.
func openTable(tb testing.TB, dsn, table string) *postgres.Store {
	tb.Helper()
	return openConfig(tb, postgres.Config{DSN: dsn, Table: table})
}

// openConfig opens a store with cfg and closes it on cleanup.
func openConfig(tb testing.TB, cfg postgres.Config) *postgres.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, cfg)
	if err != nil {
		tb.Fatalf("postgres.Open(table %s): %v", cfg.Table, err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func offsetsID(s string) shard.ID { return shard.ID(s) }
