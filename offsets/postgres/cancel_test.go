package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardlease/shardlease/offsets/postgres"
)

// A commit cancelled while it waits for the row, on a healthy server, has a
// known outcome when Commit returns, and no part of it is left running on
// the server to land later. Before the store cancelled the statement on the
// server (it only dropped the connection), the upsert stayed queued on the
// row and was applied once the row was free, after Commit had returned "may
// or may not have been applied": the chaos suite (internal/harness/chaos) saw such
// a write overwrite the same owner's next, acknowledged, commit, and the new
// owner load the older offset.
func TestCancelledCommitSettles(t *testing.T) {
	dsn := database(t)
	st := openTable(t, dsn, "settle")
	if err := st.Commit(t.Context(), "s", 1, 10); err != nil {
		t.Fatal(err)
	}
	release := lockRow(t, dsn, "settle", "s")
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	cerr := st.Commit(ctx, "s", 1, 20)
	if cerr == nil {
		t.Fatal("Commit with a cancelled context returned nil while the row was locked")
	}
	if errors.Is(cerr, postgres.ErrOutcomeUnknown) {
		t.Errorf("a commit cancelled on a healthy server left its outcome unknown: %v", cerr)
	}
	release()

	// Wait until no statement but ours runs on the database, so that a
	// write left behind by the cancelled commit has landed if it exists.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements still running 10 s after the row was released", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cp, err := st.Load(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Offset != 10 {
		t.Errorf("offset %d after a commit reported %q; want 10", cp.Offset, cerr)
	}
}
