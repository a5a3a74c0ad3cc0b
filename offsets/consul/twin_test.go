package consul

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/harness/consulkvtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest"
	"github.com/shardlease/shardlease/shard"
)

// twinStore opens a store on a Consul twin, closed on cleanup.
func twinStore(tb testing.TB, tw *consulkvtest.Twin) *Store {
	st := newStore(Config{Prefix: "fleet", Address: "twin"}, tw, nil)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// TestTwinConformance runs the offsets suite on the twin: the store's
// logic without an agent.
func TestTwinConformance(t *testing.T) {
	offsetstest.Run(t, func(tb testing.TB) offsets.Store { return twinStore(tb, consulkvtest.NewTwin()) })
}

// TestTwinFailures: each failure class reaches the caller as the sentinel
// it means; only what provably was not applied is retried.
func TestTwinFailures(t *testing.T) {
	reset := &url.Error{Op: "Put", URL: "http://twin/v1/txn", Err: errors.New("connection reset by peer")}
	for _, tc := range []struct {
		name    string
		err     error
		applied bool
		times   int // how many calls fail in a row
		want    error
	}{
		{"no leader, retried", api.StatusError{Code: 500, Body: "No cluster leader"}, false, 2, nil},
		{"no leader for good", api.StatusError{Code: 500, Body: "No cluster leader"}, false, 10, ErrUnavailable},
		{"lost answer", reset, true, 1, ErrOutcomeUnknown},
		{"permission", api.StatusError{Code: 403, Body: "Permission denied"}, false, 1, ErrPermissionDenied},
		{"malformed", api.StatusError{Code: 400, Body: "bad request"}, false, 1, shard.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tw := consulkvtest.NewTwin()
			st := twinStore(t, tw)
			if err := st.Fence(t.Context(), "s", 1); err != nil { // a cached entry: the commit is one CAS
				t.Fatal(err)
			}
			for range tc.times {
				tw.FailNext(tc.err, tc.applied)
			}
			err := st.Commit(t.Context(), "s", 1, 5)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Commit = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "commit shard s at twin") {
				t.Errorf("error %q does not name the operation, shard and agent", err)
			}
		})
	}
}

// TestTwinBatchChunks: a batch of more entries than one transaction takes
// is sent in transactions Consul accepts, and a CAS conflict in one of
// them costs a retry of that one, never a commit.
func TestTwinBatchChunks(t *testing.T) {
	tw := consulkvtest.NewTwin()
	st, other := twinStore(t, tw), twinStore(t, tw)
	ctx := t.Context()
	const n = 2*consulkv.MaxTxnOps + 1
	var batch []Entry
	for i := range n {
		s := shard.ID(fmt.Sprintf("s%03d", i))
		if err := st.Fence(ctx, s, 1); err != nil { // cached: the batch sends CAS at once
			t.Fatal(err)
		}
		batch = append(batch, Entry{Shard: s, Token: 1, Offset: int64(i)})
	}
	// Another store writes one shard of the second transaction: its CAS
	// conflicts, the transaction rolls back and goes again.
	if err := other.Commit(ctx, batch[consulkv.MaxTxnOps+3].Shard, 1, 999); err != nil {
		t.Fatal(err)
	}
	if err := st.CommitBatch(ctx, batch); err != nil {
		t.Fatalf("CommitBatch of %d: %v", n, err)
	}
	for _, e := range batch {
		cp, err := other.Load(ctx, e.Shard)
		if err != nil || cp.Offset != e.Offset {
			t.Fatalf("%s = %+v, %v; want offset %d", e.Shard, cp, err, e.Offset)
		}
	}
}

// TestFailCarriesTheCallersCause: a request that failed because its
// caller ended the context says so, with the cause, whether it was not
// applied or of unknown outcome; one that failed on the store's own
// timeout is unavailable or unknown, not the caller's.
func TestFailCarriesTheCallersCause(t *testing.T) {
	st := twinStore(t, consulkvtest.NewTwin())
	lost := errors.New("lease lost")
	parent, cancel := context.WithCancelCause(t.Context())
	ctx, stop := consulkv.WithRequestTimeout(parent, time.Hour)
	defer stop()
	cancel(lost)
	sent := errors.New("request failed")
	if err := st.fail(ctx, "commit", "s", sent, consulkv.KindUnavailable); errors.Is(err, ErrUnavailable) || !errors.Is(err, lost) || !strings.Contains(err.Error(), "not applied") {
		t.Errorf("not sent, caller ended: %v; want not applied, with the cause", err)
	}
	if err := st.fail(ctx, "commit", "s", sent, consulkv.KindOutcomeUnknown); !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, lost) {
		t.Errorf("sent, caller ended: %v; want outcome unknown, with the cause", err)
	}

	ctx, stop = consulkv.WithRequestTimeout(t.Context(), time.Nanosecond)
	defer stop()
	<-ctx.Done()
	if err := st.fail(ctx, "load", "s", sent, consulkv.KindUnavailable); !errors.Is(err, ErrUnavailable) {
		t.Errorf("the store's own timeout: %v; want unavailable", err)
	}
}
