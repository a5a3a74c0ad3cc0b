package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/postgres"
)

// testHold is the old owner's Config.MaxHold in the blackhole tests: short,
// so that they are quick. The new owner's fence must get in within
// testHold + fenceSlack of the blackhole; before the store set its hold
// limits it waited for hours (the kernel's TCP timeouts).
const (
	testHold   = 2 * time.Second
	fenceSlack = 10 * time.Second
)

// An owner vanishes inside FencedTx — its connection to PostgreSQL
// blackholed while the transaction waits for its next statement (here its
// COMMIT, lost in the hole) — and the server ends that transaction once it
// has been silent for MaxHold (idle_in_transaction_session_timeout): a
// newer owner's Fence gets in, and nothing of the old transaction is
// committed.
//
// The old owner cannot know whether its COMMIT, sent into the hole, was
// applied: once its connection is cut, FencedTx says so (ErrOutcomeUnknown).
// pgx reports that broken connection as "conn closed", safe to retry; the
// test fails if FencedTx passes that on as ErrUnavailable, "nothing was
// written".
func TestFencedTxOwnerBlackholedIdle(t *testing.T) {
	err := takeover(t, blackhole, testHold/2, func(ctx context.Context, tx pgx.Tx, inside, proceed chan struct{}) error {
		close(inside)
		<-proceed
		return nil // FencedTx sends COMMIT into the hole
	})
	if !errors.Is(err, postgres.ErrOutcomeUnknown) || errors.Is(err, postgres.ErrUnavailable) {
		t.Errorf("the old owner's FencedTx, its COMMIT sent and its connection then cut: %v; want ErrOutcomeUnknown", err)
	}
}

// The same, with the backend blocked sending a result the old owner no
// longer reads (it is not idle then, so the idle timeout does not apply):
// the kernel aborts the connection once the data has waited
// unacknowledged for MaxHold (tcp_user_timeout).
func TestFencedTxOwnerBlackholedSending(t *testing.T) {
	takeover(t, blackhole, testHold/2, func(ctx context.Context, tx pgx.Tx, inside, proceed chan struct{}) error {
		// About 160 MB, far more than the socket buffers between the
		// backend and the old owner hold.
		rows, err := tx.Query(ctx, "SELECT repeat('x', 8000) FROM generate_series(1, 20000)")
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return rows.Err()
		}
		close(inside)
		<-proceed
		for rows.Next() { // blocks in the hole until the connection is cut
		}
		return rows.Err()
	})
}

// An owner dies while a long statement of its FencedTx runs (its socket
// closed, as a killed process's is): the server notices the closed
// connection while the statement still runs (client_connection_check_interval)
// and aborts it, instead of keeping the row until the statement ends. (A
// blackhole in the middle of a statement is the same once keepalive
// declares the connection dead; the proxy cannot show that, as its kernel
// answers the probes.)
func TestFencedTxOwnerDiesMidStatement(t *testing.T) {
	dies := func(t *testing.T, px *tcpProxy, newOwner *postgres.Store) {
		waitFor(t, newOwner, 1, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT pg_sleep(600)'")
		px.Close()
	}
	takeover(t, dies, 0, func(ctx context.Context, tx pgx.Tx, inside, proceed chan struct{}) error {
		close(inside)
		_, err := tx.Exec(ctx, "SELECT pg_sleep(600)")
		return err
	})
}

func blackhole(_ *testing.T, px *tcpProxy, _ *postgres.Store) { px.Blackhole() }

// waitFor polls the count query on the store's pool until it is want, for
// at most 30 s.
func waitFor(t *testing.T, st *postgres.Store, want int, count string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n int
		if err := st.Pool().QueryRow(t.Context(), count, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d after 30 s, want %d", count, n, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fault is done to the old owner's connection once it is inside FencedTx.
type fault func(t *testing.T, px *tcpProxy, newOwner *postgres.Store)

// work is the old owner's function in FencedTx after its writes: it closes
// inside once it is where the fault should find it, then waits for proceed
// if it has more to do after the fault.
type work func(ctx context.Context, tx pgx.Tx, inside, proceed chan struct{}) error

// takeover runs a takeover from an owner that meets fault inside FencedTx.
// The old owner (token 5, through a proxy, MaxHold testHold) opens a
// FencedTx, writes an item and commits its offset in it, then runs work;
// once work closes inside, fault hits the proxy and work is let go
// (proceed). The new owner (token 6, direct) fences: it must get in
// within testHold + fenceSlack, and not before minHold (the old transaction
// held the row until then). Then the old owner's connection is cut; its
// FencedTx must have failed, with nothing of it committed; its error is
// returned.
func takeover(t *testing.T, fault fault, minHold time.Duration, work work) (oldErr error) {
	dsn := database(t)
	px, viaProxy := startProxy(t, dsn)
	ctx := t.Context()
	newOwner := openTable(t, dsn, "blackhole")
	createItems(t, newOwner)
	if err := newOwner.Commit(ctx, "s", 4, 100); err != nil {
		t.Fatal(err)
	}
	oldOwner := openConfig(t, postgres.Config{DSN: viaProxy, Table: "blackhole", MaxHold: testHold})

	inside, proceed := make(chan struct{}), make(chan struct{})
	oldDone := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		oldDone <- oldOwner.FencedTx(ctx, "s", 5, func(tx pgx.Tx) error {
			if err := insertItem(ctx, tx, "s", 1, 5); err != nil {
				return err
			}
			if err := oldOwner.CommitTx(ctx, tx, "s", 5, 200); err != nil {
				return err
			}
			return work(ctx, tx, inside, proceed)
		})
	}()
	// Runs before the stores are closed (cleanups run last first): cut the
	// old owner's connection, or closing its pool waits for it.
	t.Cleanup(func() {
		px.Close()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			t.Error("the old owner's FencedTx did not return within 30 s of its connection being cut")
		}
	})
	select {
	case <-inside:
	case err := <-oldDone:
		t.Fatalf("the old owner's FencedTx returned before the fault: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the old owner's FencedTx did not start within 30 s")
	}

	fault(t, px, newOwner)
	close(proceed)
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, testHold+fenceSlack)
	err := newOwner.Fence(fctx, "s", 6)
	cancel()
	took := time.Since(start)
	t.Logf("the new owner's fence took %v (old owner's MaxHold %v)", took.Round(time.Millisecond), testHold)
	if err != nil {
		t.Fatalf("the new owner's Fence, %v after the fault hit the old owner inside FencedTx: %v", took.Round(time.Millisecond), err)
	}
	if took < minHold {
		t.Errorf("the fence got in after %v, before %v: the old transaction did not hold the row, and the test tested nothing", took, minHold)
	}

	px.Close() // the old owner's connection breaks; its FencedTx returns
	select {
	case oldErr = <-oldDone:
		t.Logf("the old owner's FencedTx: %v", oldErr)
		if oldErr == nil {
			t.Error("the old owner's FencedTx returned nil after its transaction was ended by the server")
		}
	case <-time.After(30 * time.Second):
		t.Error("the old owner's FencedTx did not return within 30 s of its connection being cut")
	}
	if got := items(t, newOwner); len(got) != 0 {
		t.Errorf("items = %v: the old owner's transaction was committed", got)
	}
	if cp, err := newOwner.Load(ctx, "s"); err != nil || cp != (offsets.Checkpoint{Offset: 100, Token: 4, Floor: 6}) {
		t.Errorf("Load = %+v, %v; want the new floor 6 over the offset committed before, {100 4 6}", cp, err)
	}
	return oldErr
}

// The price of the limit: a live owner whose FencedTx stays silent longer
// than MaxHold (slow work between two statements) has its transaction
// ended by the server. FencedTx then fails, says why, and commits nothing.
func TestFencedTxSilentLongerThanMaxHold(t *testing.T) {
	ctx := t.Context()
	st := openConfig(t, postgres.Config{DSN: database(t), Table: "silent", MaxHold: time.Second})
	createItems(t, st)
	err := st.FencedTx(ctx, "s", 5, func(tx pgx.Tx) error {
		if err := insertItem(ctx, tx, "s", 1, 5); err != nil {
			return err
		}
		// Slow work, until the server has ended the silent session.
		waitFor(t, st, 0, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", tx.Conn().PgConn().PID())
		return nil
	})
	t.Logf("FencedTx: %v", err)
	if err == nil {
		t.Fatal("FencedTx returned nil although the server ended its transaction")
	}
	if !strings.Contains(err.Error(), "longer than the store's MaxHold") {
		t.Errorf("the error does not say the transaction outlived MaxHold")
	}
	if got := items(t, st); len(got) != 0 {
		t.Errorf("items = %v after a transaction the server ended", got)
	}
	if cp, err := st.Load(ctx, "s"); err != nil || cp != (offsets.Checkpoint{}) {
		t.Errorf("Load = %+v, %v; want nothing: the fence was rolled back with the rest", cp, err)
	}
}

// The limits are the fenced transaction's own (SET LOCAL): the caller's
// statements on the same pooled connection afterwards run without them.
func TestFencedTxLimitsEndWithIt(t *testing.T) {
	st := openTable(t, database(t)+"&pool_max_conns=1", "limits")
	ctx := t.Context()
	show := func(q querier) (got []string) {
		for _, p := range []string{"idle_in_transaction_session_timeout", "tcp_user_timeout", "client_connection_check_interval"} {
			var v string
			if err := q.QueryRow(ctx, "SHOW "+p).Scan(&v); err != nil {
				t.Fatal(err)
			}
			got = append(got, p+"="+v)
		}
		return got
	}
	before := show(st.Pool())
	var inside []string
	if err := st.FencedTx(ctx, "s", 1, func(tx pgx.Tx) error { inside = show(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	after := show(st.Pool())
	t.Logf("before %v, inside %v, after %v", before, inside, after)
	if want := []string{"idle_in_transaction_session_timeout=2500ms", "tcp_user_timeout=2500", "client_connection_check_interval=1s"}; !slices.Equal(inside, want) {
		t.Errorf("inside FencedTx %v, want %v", inside, want)
	}
	if !slices.Equal(after, before) {
		t.Errorf("after FencedTx the connection has %v, before it had %v", after, before)
	}
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
