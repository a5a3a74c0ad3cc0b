package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/postgres"
)

// fencedSetup opens a store and a user table "items" in the same database.
func fencedSetup(t *testing.T) *postgres.Store {
	t.Helper()
	st := openTable(t, database(t), "fenced")
	createItems(t, st)
	return st
}

// createItems creates the user table "items" in the store's database.
func createItems(t *testing.T, st *postgres.Store) {
	t.Helper()
	if _, err := st.Pool().Exec(t.Context(), "CREATE TABLE items (shard text, item int, by_token bigint)"); err != nil {
		t.Fatal(err)
	}
}

func insertItem(ctx context.Context, tx pgx.Tx, s string, item int, token uint64) error {
	_, err := tx.Exec(ctx, "INSERT INTO items VALUES ($1, $2, $3)", s, item, int64(token))
	return err
}

func items(t *testing.T, st *postgres.Store) []string {
	t.Helper()
	rows, err := st.Pool().Query(t.Context(), "SELECT shard || ':' || item || '@' || by_token FROM items ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The user's writes and the offset commit together with a passing token
// check, and not at all with a failing one.
func TestFencedTx(t *testing.T) {
	st := fencedSetup(t)
	ctx := t.Context()

	err := st.FencedTx(ctx, "s", 5, func(tx pgx.Tx) error {
		if err := insertItem(ctx, tx, "s", 1, 5); err != nil {
			return err
		}
		return st.CommitTx(ctx, tx, "s", 5, 100)
	})
	if err != nil {
		t.Fatalf("FencedTx with a current token: %v", err)
	}
	if cp, _ := st.Load(ctx, "s"); cp != (offsets.Checkpoint{Offset: 100, Token: 5, Floor: 5}) {
		t.Fatalf("checkpoint %+v after the fenced commit", cp)
	}

	// A newer owner fences; the old one's transaction is refused before
	// its function runs, and nothing of it is written.
	if err := st.Fence(ctx, "s", 7); err != nil {
		t.Fatal(err)
	}
	ran := false
	err = st.FencedTx(ctx, "s", 5, func(tx pgx.Tx) error { ran = true; return insertItem(ctx, tx, "s", 2, 5) })
	if !errors.Is(err, offsets.ErrStaleToken) || !strings.Contains(err.Error(), "shard s: token 5 is below floor 7") {
		t.Fatalf("FencedTx with a stale token: %v", err)
	}
	if ran {
		t.Error("the function ran although the token was stale")
	}

	// The function's error rolls everything back, the floor it raised too.
	boom := errors.New("boom")
	err = st.FencedTx(ctx, "s", 9, func(tx pgx.Tx) error {
		if err := insertItem(ctx, tx, "s", 3, 9); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("FencedTx whose function failed = %v, want the function's error as is", err)
	}
	if cp, _ := st.Load(ctx, "s"); cp.Floor != 7 {
		t.Fatalf("floor %d after a rolled-back fenced transaction; want 7", cp.Floor)
	}

	// CommitTx in a transaction of the caller's own is fenced as well.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CommitTx(ctx, tx, "s", 6, 1); !errors.Is(err, offsets.ErrStaleToken) {
		t.Errorf("CommitTx with a stale token: %v", err)
	}
	_ = tx.Rollback(ctx)

	if got := items(t, st); len(got) != 1 || got[0] != "s:1@5" {
		t.Fatalf("items = %v, want only the fenced commit's [s:1@5]", got)
	}
}

// While an owner's fenced transaction is open, a newer owner's Fence waits
// for it, and the old owner's writes are visible to the new owner's Load
// once it got in: the old owner cannot be overtaken half-way.
func TestFencedTxHoldsTheFence(t *testing.T) {
	st := fencedSetup(t)
	ctx := t.Context()
	inside, proceed := make(chan struct{}), make(chan struct{})
	oldDone := make(chan error, 1)
	go func() {
		oldDone <- st.FencedTx(ctx, "s", 5, func(tx pgx.Tx) error {
			close(inside)
			<-proceed
			if err := insertItem(ctx, tx, "s", 1, 5); err != nil {
				return err
			}
			return st.CommitTx(ctx, tx, "s", 5, 100)
		})
	}()
	<-inside

	fenced := make(chan error, 1)
	go func() { fenced <- st.Fence(ctx, "s", 6) }()
	select {
	case err := <-fenced:
		t.Fatalf("the new owner's Fence returned (%v) while the old owner's fenced transaction was open", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(proceed)
	if err := <-oldDone; err != nil {
		t.Fatalf("old owner's FencedTx: %v", err)
	}
	if err := <-fenced; err != nil {
		t.Fatalf("new owner's Fence: %v", err)
	}
	if cp, _ := st.Load(ctx, "s"); cp != (offsets.Checkpoint{Offset: 100, Token: 5, Floor: 6}) {
		t.Fatalf("the new owner loads %+v; want the old owner's offset 100 under floor 6", cp)
	}
	err := st.FencedTx(ctx, "s", 5, func(tx pgx.Tx) error { return insertItem(ctx, tx, "s", 2, 5) })
	if !errors.Is(err, offsets.ErrStaleToken) {
		t.Fatalf("old owner after the fence: %v", err)
	}
	if got := items(t, st); len(got) != 1 {
		t.Fatalf("items = %v", got)
	}
}

// Misuse is reported, not committed.
func TestFencedTxMisuse(t *testing.T) {
	st := fencedSetup(t)
	ctx := t.Context()
	err := st.FencedTx(ctx, "s", 1, func(tx pgx.Tx) error { return tx.Commit(ctx) })
	if err == nil || !strings.Contains(err.Error(), "must leave that to FencedTx") {
		t.Errorf("function that commits itself: %v", err)
	}
	err = st.FencedTx(ctx, "s", 1, func(tx pgx.Tx) error {
		_, _ = tx.Exec(ctx, "INSERT INTO no_such_table VALUES (1)") // error swallowed
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "rolled back at COMMIT") {
		t.Errorf("function that swallowed a failed statement: %v", err)
	}
	err = st.FencedTxWith(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}, "s", 1, func(pgx.Tx) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only: %v", err)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if err := st.FencedTx(ctx2, "s", 1, func(pgx.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: %v", err)
	}
}
