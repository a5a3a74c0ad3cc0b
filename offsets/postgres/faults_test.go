package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardlease/shardlease/internal/harness/pgtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/postgres"
)

// lockRow holds the shard's row locked in a transaction of its own until
// the returned function is called, so that a write to it blocks.
func lockRow(t *testing.T, dsn, table, s string) (release func()) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM "+table+" WHERE shard = $1 FOR UPDATE", s); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = tx.Rollback(context.Background())
			_ = conn.Close(context.Background())
		})
	}
	t.Cleanup(release)
	return release
}

// A commit whose context ends while it waits for the row is never reported
// as a success, and the store says whether it may have been applied.
func TestCancelMidCommit(t *testing.T) {
	dsn := database(t)
	st := openTable(t, dsn, "cancel")
	if err := st.Commit(t.Context(), "s", 1, 10); err != nil {
		t.Fatal(err)
	}
	release := lockRow(t, dsn, "cancel", "s")

	lost := errors.New("lease lost")
	ctx, cancel := context.WithCancelCause(t.Context())
	time.AfterFunc(200*time.Millisecond, func() { cancel(lost) })
	err := st.Commit(ctx, "s", 1, 20)
	release()
	if err == nil {
		t.Fatal("Commit with a cancelled context returned nil while the row was locked")
	}
	t.Logf("error: %v", err)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, lost) {
		t.Errorf("error does not carry context.Canceled and its cause")
	}
	cp, lerr := st.Load(t.Context(), "s")
	if lerr != nil {
		t.Fatal(lerr)
	}
	switch {
	case errors.Is(err, postgres.ErrOutcomeUnknown):
		if cp.Offset != 10 && cp.Offset != 20 {
			t.Errorf("offset %d after an unknown outcome; want 10 or 20", cp.Offset)
		}
	case !strings.Contains(err.Error(), "not applied"):
		t.Errorf("error neither says the outcome is unknown nor that it was not applied")
		fallthrough
	default:
		if cp.Offset != 10 {
			t.Errorf("offset %d after a commit reported not applied; want 10", cp.Offset)
		}
	}
}

// The server dies while a commit waits for the row: the commit had been
// sent, so its outcome is unknown, and the store says exactly that.
func TestServerCrashMidCommit(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	st := openTable(t, dsn, "crash")
	if err := st.Commit(t.Context(), "s", 1, 10); err != nil {
		t.Fatal(err)
	}
	lockRow(t, dsn, "crash", "s")

	done := make(chan error, 1)
	go func() { done <- st.Commit(context.Background(), "s", 1, 20) }()
	// Kill the server only once the commit's statement waits on the row
	// lock: killed before the statement was sent, the commit would rightly
	// not say its outcome is unknown.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends wait on a lock 30 s after the commit began, want the commit's alone", n)
		}
	}
	_ = conn.Close(context.Background())
	srv.Kill(t)
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Commit did not return after the server was killed")
	}
	t.Logf("error: %v", err)
	if !errors.Is(err, postgres.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "may or may not have been applied") {
		t.Fatalf("Commit cut off by a crash: %v; want ErrOutcomeUnknown", err)
	}

	srv.Restart(t)
	cp, err := st.Load(t.Context(), "s")
	if err != nil {
		t.Fatalf("Load after the restart: %v", err)
	}
	if cp.Offset != 10 {
		t.Fatalf("offset %d; the blocked commit never committed, want 10", cp.Offset)
	}
}

// The database restarts (fast, and after a crash) in the middle of a run of
// commits. Every commit reported as done is there afterwards; every failure
// says what happened; the store works again once the server is back,
// without being reopened.
func TestRestartDuringRun(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	st := openTable(t, dsn, "restart")

	for _, crash := range []bool{false, true} {
		var (
			mu                  sync.Mutex
			acked, maybe        int64 // highest offset acknowledged / with unknown outcome
			failures, successes int
			errs                = map[string]int{}
		)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for off := int64(1); ; off++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := st.Commit(ctx, "s", 7, off)
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					acked, successes = off, successes+1
				case errors.Is(err, postgres.ErrOutcomeUnknown):
					maybe, failures = off, failures+1
					errs["outcome unknown"]++
				case errors.Is(err, postgres.ErrUnavailable):
					failures++
					errs["unavailable"]++
				default:
					failures++
					errs[err.Error()]++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
		time.Sleep(300 * time.Millisecond)
		if crash {
			srv.Kill(t)
		} else {
			srv.Stop(t)
		}
		time.Sleep(300 * time.Millisecond)
		srv.Restart(t)
		time.Sleep(500 * time.Millisecond)
		close(stop)
		<-done

		mu.Lock()
		t.Logf("crash=%v: %d commits acknowledged, %d failed %v", crash, successes, failures, errs)
		for msg := range errs {
			if msg != "outcome unknown" && msg != "unavailable" {
				t.Errorf("a failure that is neither unavailable nor outcome unknown: %s", msg)
			}
		}
		if failures == 0 {
			t.Errorf("no commit failed while the server was down: the test did not test anything")
		}
		cp, err := st.Load(t.Context(), "s")
		if err != nil {
			t.Fatalf("Load after the restart: %v", err)
		}
		// The last commit acknowledged was the last one tried, or an
		// unknown-outcome one came after it: the offset is one of those.
		if cp.Offset != acked && cp.Offset != maybe {
			t.Errorf("offset %d after the run; the last acknowledged commit wrote %d (last unknown outcome %d)", cp.Offset, acked, maybe)
		}
		mu.Unlock()
	}
}

// A commit acknowledged before a crash (SIGKILL, no shutdown checkpoint) is
// there after crash recovery.
func TestAcknowledgedIsDurable(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	st := openTable(t, dsn, "durable")
	ctx := t.Context()
	for off := int64(1); off <= 50; off++ {
		if err := st.Commit(ctx, "a", 3, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Fence(ctx, "b", 9); err != nil {
		t.Fatal(err)
	}
	if err := st.CommitBatch(ctx, []postgres.Entry{{Shard: "c", Token: 4, Offset: 40}, {Shard: "d", Token: 5, Offset: 50}}); err != nil {
		t.Fatal(err)
	}
	srv.Kill(t)
	srv.Restart(t)
	want := map[string]offsets.Checkpoint{
		"a": {Offset: 50, Token: 3, Floor: 3}, "b": {Floor: 9},
		"c": {Offset: 40, Token: 4, Floor: 4}, "d": {Offset: 50, Token: 5, Floor: 5},
	}
	for s, w := range want {
		cp, err := st.Load(ctx, offsetsID(s))
		if err != nil || cp != w {
			t.Errorf("after a crash Load(%s) = %+v, %v; want %+v", s, cp, err, w)
		}
	}
	if err := st.Commit(ctx, "b", 8, 1); !errors.Is(err, offsets.ErrStaleToken) {
		t.Errorf("the floor did not survive the crash: Commit(b, 8) = %v", err)
	}
}
