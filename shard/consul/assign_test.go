package consul_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// txnSpy records the /v1/txn requests of Assign (those with a
// check-session operation) and runs before, if set, before each is sent,
// with its number (1, 2, ...) in the current call.
type txnSpy struct {
	mu     sync.Mutex
	txns   []api.TxnOps
	before func(n int) error
	err    error // the first error of before
}

func (s *txnSpy) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "/v1/txn" && r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var ops api.TxnOps
			if json.Unmarshal(body, &ops) == nil && slices.ContainsFunc(ops, func(op *api.TxnOp) bool {
				return op.KV != nil && op.KV.Verb == api.KVCheckSession
			}) {
				s.mu.Lock()
				s.txns = append(s.txns, ops)
				n, before := len(s.txns), s.before
				s.mu.Unlock()
				if before != nil {
					if err := before(n); err != nil && s.err == nil {
						s.err = err
					}
				}
			}
		}
		return next.RoundTrip(r)
	})
}

func (s *txnSpy) reset(before func(n int) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txns, s.before, s.err = nil, before, nil
}

// TestAssignChecksEveryTransaction: an Assign of 300 keys is three
// transactions (126, 126, 48), and each opens with check-session and
// check-index on P/assignor for the caller's session and epoch. When the
// assignor is deposed between two of them (its session destroyed, another
// candidate elected), Consul refuses the next one: the error wraps
// ErrNotAssignor, names the new holder and how many keys were written,
// and exactly the first transaction's keys hold the deposed assignor's
// values.
func TestAssignChecksEveryTransaction(t *testing.T) {
	agent := consultest.StartDev(t)
	spy := &txnSpy{}
	c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.WrapTransport = spy.wrap })
	other := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.Prefix = c.Prefix() })
	ctx := t.Context()
	const workers = 300
	cfg, err := c.Fleet().Configure(ctx, shard.Config{Shards: workers})
	if err != nil {
		t.Fatal(err)
	}
	a := newSession(t, c, "a", time.Hour, 0)
	b := newSession(t, other, "b", time.Hour, 0)
	epoch, held, err := shard.TryLock(ctx, c.Locks(), a, shard.AssignorLock)
	if err != nil || !held {
		t.Fatalf("Campaign = %d, %v, %v", epoch, held, err)
	}

	names := make([]string, workers)
	set := func(since time.Time) map[string]*shard.Assignment {
		m := make(map[string]*shard.Assignment, workers)
		for i := range workers {
			names[i] = fmt.Sprintf("w-%03d", i)
			m[names[i]] = &shard.Assignment{Shards: cfg.IDs()[i : i+1], Memory: []byte(since.Format(time.RFC3339))}
		}
		return m
	}
	first := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	spy.reset(nil)
	if err := c.Assignments().Assign(ctx, a, epoch, set(first)); err != nil {
		t.Fatal(err)
	}
	assignor := c.Prefix() + "/assignor"
	var sizes []int
	for i, ops := range spy.txns {
		sizes = append(sizes, (len(ops)-2)/2) // a key and its memory per worker
		cs, ci := ops[0].KV, ops[1].KV
		if cs.Verb != api.KVCheckSession || cs.Key != assignor || cs.Session != string(a) ||
			ci.Verb != api.KVCheckIndex || ci.Key != assignor || ci.Index != uint64(epoch) {
			t.Fatalf("transaction %d opens with %+v, %+v; want check-session %s and check-index %d on %s", i+1, cs, ci, a, epoch, assignor)
		}
	}
	if !slices.Equal(sizes, []int{63, 63, 63, 63, 48}) {
		t.Fatalf("workers per transaction %v, want [63 63 63 63 48]", sizes)
	}

	// Deposed between the first and the second transaction.
	var eb shard.Token
	spy.reset(func(n int) error {
		if n != 2 {
			return nil
		}
		if err := other.Sessions().Destroy(ctx, a); err != nil {
			return err
		}
		e, held, err := shard.TryLock(ctx, other.Locks(), b, shard.AssignorLock)
		if err == nil && !held {
			err = errors.New("b could not take the assignor lock")
		}
		eb = e
		return err
	})
	second := first.Add(time.Hour)
	err = c.Assignments().Assign(ctx, a, epoch, set(second))
	if spy.err != nil {
		t.Fatalf("deposing the assignor: %v", spy.err)
	}
	if !errors.Is(err, shard.ErrNotAssignor) || !strings.Contains(err.Error(), string(b)) || !strings.Contains(err.Error(), "63 of 300") {
		t.Fatalf("Assign by an assignor deposed after its first transaction = %v; want ErrNotAssignor naming %s and 63 of 300 keys written", err, b)
	}
	if len(spy.txns) != 2 {
		t.Fatalf("%d transactions sent, want 2: none after the refused one", len(spy.txns))
	}
	snap := snapshot(t, other)
	for i, w := range names {
		want := first
		if i < 63 {
			want = second
		}
		if got := snap.Assignments[w]; string(got.Memory) != want.Format(time.RFC3339) || got.Epoch != epoch {
			t.Fatalf("%s = %+v, want since %v at epoch %d", w, got, want, epoch)
		}
	}
	if snap.Assignor.Session != b || snap.Assignor.Token != eb {
		t.Fatalf("assignor %+v, want b's session %s at epoch %d", snap.Assignor, b, eb)
	}
}

// TestAssignSplitsLargeTransactions: assignments of many scattered shards
// are large; Consul 1.14.8 refuses a /v1/txn body over 512 KiB (HTTP 413),
// so Assign splits by size as well as by count.
func TestAssignSplitsLargeTransactions(t *testing.T) {
	agent := consultest.StartDev(t)
	var requests consul.RequestCounter
	c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.WrapTransport = requests.Wrap })
	ctx := t.Context()
	cfg, err := c.Fleet().Configure(ctx, shard.Config{Shards: shard.MaxShards})
	if err != nil {
		t.Fatal(err)
	}
	a := newSession(t, c, "a", time.Hour, 0)
	epoch, _, err := shard.TryLock(ctx, c.Locks(), a, shard.AssignorLock)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 8 // every third shard each: about 130 KB a value
	ids := cfg.IDs()
	set := make(map[string]*shard.Assignment, workers)
	var total int
	for w := range workers {
		var mine []shard.ID
		for i := w % 3; i < len(ids); i += 3 {
			mine = append(mine, ids[i])
		}
		a := &shard.Assignment{Epoch: epoch, Shards: mine}
		value, err := keycodec.EncodeAssignment(cfg, *a)
		if err != nil {
			t.Fatal(err)
		}
		total += len(value)
		set[fmt.Sprintf("w-%02d", w)] = a
	}

	// The evidence: the same keys in one transaction are refused.
	var ops api.TxnOps
	for w, a := range set {
		value, _ := keycodec.EncodeAssignment(cfg, *a)
		ops = append(ops, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.Prefix() + "/assign/" + w, Value: value}})
	}
	_, _, _, err = consul.APIClient(c).Txn().Txn(ops, nil)
	if err == nil || !strings.Contains(err.Error(), "too large, max size: 524288") {
		t.Fatalf("one transaction of %d values, %d bytes before base64: %v; want it refused as too large", workers, total, err)
	}

	requests.Reset()
	if err := c.Assignments().Assign(ctx, a, epoch, set); err != nil {
		t.Fatalf("Assign of %d values, %d bytes: %v", workers, total, err)
	}
	if n := requests.Counts()["PUT /v1/txn"]; n < 3 {
		t.Fatalf("%d transactions for %d bytes of values, want at least 3", n, total)
	}
	snap := snapshot(t, c)
	for w, want := range set {
		if got := snap.Assignments[w]; !slices.Equal(got.Shards, want.Shards) {
			t.Fatalf("%s: %d shards back, want %d", w, len(got.Shards), len(want.Shards))
		}
	}
	t.Logf("%d values, %d bytes before base64, in %d transactions", workers, total, requests.Counts()["PUT /v1/txn"])
}

// TestWatchAssignmentOfAMissingKey records what Consul 1.14.8 does with a
// blocking get of a missing key, which a worker meets before the assignor
// first writes its key: Index is the KV store's highest index. Once the
// query blocks, writes of other keys do not end it (Consul re-runs it and,
// finding the key still missing, keeps waiting); it returns when the key
// is written, or at WatchWait with the store's moved index. A call asked
// with an index older than the store's returns at once.
func TestWatchAssignmentOfAMissingKey(t *testing.T) {
	agent := consultest.StartDev(t)
	const wait = 2 * time.Second
	c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.WatchWait = wait })
	ctx := t.Context()
	cfg, err := c.Fleet().Configure(ctx, shard.Config{Shards: 8})
	if err != nil {
		t.Fatal(err)
	}
	ids := cfg.IDs()
	a := newSession(t, c, "a", time.Hour, 0)
	epoch, _, err := shard.TryLock(ctx, c.Locks(), a, shard.AssignorLock)
	if err != nil {
		t.Fatal(err)
	}
	assign := func(set map[string]*shard.Assignment) {
		t.Helper()
		if err := c.Assignments().Assign(ctx, a, epoch, set); err != nil {
			t.Fatal(err)
		}
	}
	noise := func() { // a sibling key and a shard lock
		assign(map[string]*shard.Assignment{"w-xy": {Shards: ids[:1]}})
		acquire(t, c, a, ids[7])
	}
	type result struct {
		key shard.AssignmentKey
		err error
		at  time.Duration
	}
	watch := func(after uint64) <-chan result {
		ch := make(chan result, 1)
		start := time.Now()
		go func() {
			k, err := c.Assignments().Watch(ctx, "w-x", after)
			ch <- result{k, err, time.Since(start)}
		}()
		return ch
	}

	k, err := c.Assignments().Watch(ctx, "w-x", 0)
	if err != nil || k.Exists {
		t.Fatalf("WatchAssignment(w-x, 0) = %+v, %v; want missing", k, err)
	}
	// Blocked: other writes do not end it; WatchWait does, with a moved index.
	ch := watch(k.Index)
	time.Sleep(300 * time.Millisecond)
	noise()
	r := <-ch
	if r.err != nil || r.key.Exists || r.key.Index <= k.Index || r.at < wait {
		t.Fatalf("blocked on a missing key, other keys written: returned %+v, %v after %v; want missing at a higher index after WatchWait %v", r.key, r.err, r.at, wait)
	}
	// Asked with an index older than the store's: at once.
	noise()
	ch = watch(r.key.Index)
	if r := <-ch; r.err != nil || r.key.Exists || r.at > time.Second {
		t.Fatalf("asked with an index older than the store's: %+v, %v after %v; want missing at once", r.key, r.err, r.at)
	}
	// Blocked: the key's write ends it.
	k, err = c.Assignments().Watch(ctx, "w-x", 0)
	if err != nil {
		t.Fatal(err)
	}
	ch = watch(k.Index)
	time.Sleep(300 * time.Millisecond)
	assign(map[string]*shard.Assignment{"w-x": {Shards: ids[2:3]}})
	if r := <-ch; r.err != nil || !r.key.Exists || r.at >= wait {
		t.Fatalf("blocked on a missing key that is then written: %+v, %v after %v; want it, before WatchWait", r.key, r.err, r.at)
	}
}

// TestAssignorValueEditedByHand: a plain put on P/assignor (an operator's
// edit) keeps the lock's session but moves its modify index: snapshots
// and WatchAssignor show the holder, the new epoch and the unreadable
// value as a problem; Assign with the old epoch is refused, and the
// holder's next Campaign returns the new epoch, with which it assigns.
func TestAssignorValueEditedByHand(t *testing.T) {
	agent := consultest.StartDev(t)
	c := newCoordinator(t, agent, nil)
	ctx := t.Context()
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 4}); err != nil {
		t.Fatal(err)
	}
	a := newSession(t, c, "a", time.Hour, 0)
	epoch, _, err := shard.TryLock(ctx, c.Locks(), a, shard.AssignorLock)
	if err != nil {
		t.Fatal(err)
	}
	key := c.Prefix() + "/assignor"
	if _, err := consul.APIClient(c).KV().Put(&api.KVPair{Key: key, Value: []byte("edited")}, nil); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, c)
	if k := snap.Assignor; k.Session != a || k.Worker != "" || k.Token <= epoch || !strings.HasPrefix(k.Problem, key+": ") {
		t.Fatalf("snapshot assignor after a hand edit = %+v, want %s holding it at an epoch above %d, with a problem", k, a, epoch)
	}
	if !slices.ContainsFunc(snap.Problems, func(p string) bool { return strings.HasPrefix(p, key+": malformed lock value") }) {
		t.Fatalf("problems %q do not name %s", snap.Problems, key)
	}
	if k, err := c.Locks().Watch(ctx, shard.AssignorLock, 0); err != nil || k.Problem == "" || k.Session != a || k.Token != snap.Assignor.Token {
		t.Fatalf("WatchAssignor(0) = %+v, %v; want the holder, the new epoch and a problem", k, err)
	}
	set := map[string]*shard.Assignment{"w": {}}
	if err := c.Assignments().Assign(ctx, a, epoch, set); !errors.Is(err, shard.ErrNotAssignor) {
		t.Fatalf("Assign with the epoch from before the edit = %v, want ErrNotAssignor", err)
	}
	again, held, err := shard.TryLock(ctx, c.Locks(), a, shard.AssignorLock)
	if err != nil || !held || again != snap.Assignor.Token {
		t.Fatalf("the holder's Campaign after the edit = %d, %v, %v; want the new epoch %d", again, held, err, snap.Assignor.Token)
	}
	if err := c.Assignments().Assign(ctx, a, again, set); err != nil {
		t.Fatalf("Assign with the new epoch: %v", err)
	}
}
