package consul_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/consul"
)

// Two stores on one prefix (two workers): each one's memory of the other's
// writes goes stale, and neither may act on it wrongly.
func TestTwoStoresOnePrefix(t *testing.T) {
	a := consultest.StartDev(t)
	prefix := freshPrefix()
	old, nu := newStore(t, a, prefix), newStore(t, a, prefix)
	ctx := t.Context()

	if err := old.Commit(ctx, "s", 5, 100); err != nil {
		t.Fatal(err)
	}
	if err := nu.Fence(ctx, "s", 7); err != nil { // the new owner
		t.Fatal(err)
	}
	// old remembers floor 5; its CAS fails, it reads floor 7, and refuses.
	err := old.Commit(ctx, "s", 5, 110)
	var stale *offsets.StaleTokenError
	if !errors.As(err, &stale) || stale.Floor != 7 {
		t.Fatalf("old owner's commit after the fence = %v; want stale below floor 7", err)
	}
	// A third owner, through the old store: the CAS conflict is retried
	// from a fresh read and succeeds.
	if err := old.Commit(ctx, "s", 8, 120); err != nil {
		t.Fatalf("commit with a newer token through a store with a stale memory: %v", err)
	}
	if err := nu.Commit(ctx, "s", 7, 130); !errors.As(err, &stale) || stale.Floor != 8 {
		t.Fatalf("commit with token 7 after 8 = %v", err)
	}
	if cp, err := nu.Load(ctx, "s"); err != nil || cp != (offsets.Checkpoint{Offset: 120, Token: 8, Floor: 8}) {
		t.Fatalf("Load = %+v, %v", cp, err)
	}
}

// lossyTransport performs requests, but when armed throws away the answer
// to the next write transaction and reports a broken connection instead:
// the write happened, the client cannot know.
type lossyTransport struct {
	next  http.RoundTripper
	armed atomic.Bool
}

func (l *lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := l.next.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/v1/txn") && bytes.Contains(body, []byte(`"cas"`)) && l.armed.Swap(false) {
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (simulated)")
	}
	return resp, err
}

// A commit whose answer is lost is reported as of unknown outcome, never as
// success or failure; a retry with the same token is then safe.
func TestLostAnswer(t *testing.T) {
	a := consultest.StartDev(t)
	cfg := a.Config()
	lossy := &lossyTransport{next: cfg.Transport}
	cfg.HttpClient = &http.Client{Transport: lossy}
	t.Cleanup(cfg.Transport.CloseIdleConnections)
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := consul.New(consul.Config{Client: c, Address: a.HTTPAddr, Prefix: freshPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if err := st.Commit(ctx, "s", 3, 10); err != nil {
		t.Fatal(err)
	}
	lossy.armed.Store(true)
	err = st.Commit(ctx, "s", 3, 20)
	t.Logf("error: %v", err)
	if !errors.Is(err, consul.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "may or may not have been applied") {
		t.Fatalf("commit whose answer was lost = %v; want ErrOutcomeUnknown", err)
	}
	if cp, _ := st.Load(ctx, "s"); cp.Offset != 20 {
		t.Fatalf("offset %d; the lost answer's commit was applied (20)", cp.Offset)
	}
	if err := st.Commit(ctx, "s", 3, 20); err != nil {
		t.Fatalf("retry with the same token: %v", err)
	}

	// The same for a batch: every entry of the lost transaction is unknown.
	lossy.armed.Store(true)
	err = st.CommitBatch(ctx, []consul.Entry{{Shard: "s", Token: 3, Offset: 30}, {Shard: "u", Token: 1, Offset: 1}})
	var be *consul.BatchError
	if !errors.As(err, &be) || !errors.Is(be.Errs[0], consul.ErrOutcomeUnknown) || !errors.Is(be.Errs[1], consul.ErrOutcomeUnknown) {
		t.Fatalf("batch whose answer was lost = %v", err)
	}
}

// A context that ends while the commit is in flight: the commit is
// reported as not done or as unknown, with the context's cause.
func TestCancelInFlight(t *testing.T) {
	a := consultest.StartDev(t)
	st := newStore(t, a, freshPrefix())
	lost := errors.New("lease lost")
	var unknown, notApplied int
	for i := range 200 {
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Duration(i%20)*50*time.Microsecond, func() { cancel(lost) })
		err := st.Commit(ctx, "s", 1, int64(i))
		cancel(nil)
		switch {
		case err == nil:
		case errors.Is(err, consul.ErrOutcomeUnknown):
			unknown++
		case strings.Contains(err.Error(), "not applied") || errors.Is(err, context.Canceled):
			notApplied++
		default:
			t.Fatalf("commit %d with a cancelled context: %v", i, err)
		}
		if err != nil && !errors.Is(err, lost) {
			t.Errorf("error %v does not carry the context's cause", err)
		}
	}
	t.Logf("200 commits racing a cancel: %d unknown, %d not applied", unknown, notApplied)
}

// The Raft leader dies in the middle of a run of commits. Calls fail with
// ErrUnavailable or ErrOutcomeUnknown only; every commit acknowledged is
// there after the election; the store works again without being reopened.
func TestLeaderKilled(t *testing.T) {
	cl := consultest.StartCluster(t, 3)
	leader := cl.Leader(t)
	var via *consultest.Agent // the store's agent must survive
	for _, a := range cl.Agents {
		if a != leader {
			via = a
			break
		}
	}
	st, err := consul.New(consul.Config{Client: via.Client(t), Address: via.HTTPAddr, Prefix: freshPrefix(), RequestTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	var (
		mu            sync.Mutex
		acked, maybe  int64
		failures, oks int
		other         []string
	)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for off := int64(1); ; off++ {
			select {
			case <-stop:
				return
			default:
			}
			err := st.Commit(context.Background(), "s", 4, off)
			mu.Lock()
			switch {
			case err == nil:
				acked, oks = off, oks+1
			case errors.Is(err, consul.ErrOutcomeUnknown):
				maybe, failures = off, failures+1
			case errors.Is(err, consul.ErrUnavailable):
				failures++
			default:
				other = append(other, err.Error())
			}
			mu.Unlock()
			if err != nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)
	cl.KillChosenLeader(t, leader)
	// Wait until commits succeed again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := oks
		mu.Unlock()
		time.Sleep(time.Second)
		mu.Lock()
		recovered := oks > n
		mu.Unlock()
		if recovered || time.Now().After(deadline) {
			break
		}
	}
	close(stop)
	<-done

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d commits acknowledged, %d failed as unavailable or unknown", oks, failures)
	for _, e := range other {
		t.Errorf("a failure that is neither unavailable nor outcome unknown: %s", e)
	}
	cp, err := st.Load(t.Context(), "s")
	if err != nil {
		t.Fatalf("Load after the election: %v", err)
	}
	if cp.Offset != acked && cp.Offset != maybe {
		t.Fatalf("offset %d after the election; last acknowledged %d, last unknown %d", cp.Offset, acked, maybe)
	}
}
