package etcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/etcd"
	"github.com/shardlease/shardlease/shard"
)

// failingTxns is a KV whose transactions fail with err once they are sent
// (after sent, when set, ran: it may apply them first).
type failingTxns struct {
	clientv3.KV
	err  error
	sent func(clientv3.Txn) // nil: nothing reaches etcd
}

func (k failingTxns) Txn(ctx context.Context) clientv3.Txn {
	return &failingTxn{Txn: k.KV.Txn(ctx), k: k}
}

type failingTxn struct {
	clientv3.Txn
	k failingTxns
}

func (t *failingTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *failingTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *failingTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.k.sent != nil {
		t.k.sent(t.Txn)
	}
	return nil, t.k.err
}

// TestWriteOutcomes: a write whose answer is lost after it was sent is
// ErrOutcomeUnknown, whether or not it was applied, and retrying it with
// the same token is safe; one etcd refuses before applying (no leader, too
// many requests) is ErrUnavailable; a caller's cancellation keeps its
// cause.
func TestWriteOutcomes(t *testing.T) {
	c := etcdtest.Start(t)
	ctx := t.Context()
	cli := client(t, c)
	st, err := etcd.New(etcd.Config{Client: cli, Prefix: freshPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const s = shard.ID("stream/shard-004")
	lost := errors.New("connection reset after the request was written")

	// Applied, answer lost.
	st.SetKV(failingTxns{KV: cli.KV, err: lost, sent: func(tx clientv3.Txn) {
		if _, err := tx.Commit(); err != nil {
			t.Errorf("the real commit: %v", err)
		}
	}})
	if err := st.Commit(ctx, s, 5, 10); !errors.Is(err, offsets.ErrOutcomeUnknown) || !errors.Is(err, lost) {
		t.Fatalf("a commit applied whose answer was lost: %v, want ErrOutcomeUnknown wrapping the cause", err)
	}
	// Not applied, answer lost: the same error.
	st.SetKV(failingTxns{KV: cli.KV, err: lost})
	if err := st.Commit(ctx, s, 5, 20); !errors.Is(err, offsets.ErrOutcomeUnknown) {
		t.Fatalf("a commit not applied whose answer was lost: %v, want ErrOutcomeUnknown", err)
	}
	// Refused before applying.
	for _, refusal := range []error{rpctypes.ErrGRPCNoLeader, rpctypes.ErrGRPCRequestTooManyRequests} {
		st.SetKV(failingTxns{KV: cli.KV, err: refusal})
		if err := st.Commit(ctx, s, 5, 30); !errors.Is(err, offsets.ErrUnavailable) {
			t.Errorf("refused with %v: %v, want ErrUnavailable", refusal, err)
		}
	}
	// The retry with the same token, on a working KV, lands.
	st.SetKV(cli.KV)
	if err := st.Commit(ctx, s, 5, 20); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if cp, err := st.Load(ctx, s); err != nil || cp.Offset != 20 || cp.Token != 5 {
		t.Fatalf("after the retry: %+v, %v", cp, err)
	}

	// A caller's context ended mid-write, with a cause: the error has both.
	revoked := errors.New("revoked by the test")
	cctx, cancel := context.WithCancelCause(ctx)
	st.SetKV(failingTxns{KV: cli.KV, err: context.Canceled, sent: func(clientv3.Txn) { cancel(revoked) }})
	err = st.Commit(cctx, s, 5, 40)
	if !errors.Is(err, offsets.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) || !errors.Is(err, revoked) {
		t.Fatalf("a write cut by the caller: %v, want ErrOutcomeUnknown with the context's error and its cause", err)
	}
}

// TestStoreTimeoutIsNamed: a call that the store's own request timeout
// ends says so, as opposed to a caller's deadline.
func TestStoreTimeoutIsNamed(t *testing.T) {
	c := etcdtest.Start(t)
	st, err := etcd.New(etcd.Config{Client: client(t, c), Prefix: freshPrefix(), RequestTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c.Members[0].Kill()
	_, err = st.Load(t.Context(), "stream/shard-005")
	if !errors.Is(err, offsets.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want ErrUnavailable and the deadline", err)
	}
	if !strings.Contains(err.Error(), "request timeout passed") {
		t.Errorf("%v does not say the store's timeout ended it", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}
