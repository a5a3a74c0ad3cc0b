package consulkvtest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/harness/consulkvtest"
)

func set(key, value string) *api.TxnOp {
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: []byte(value)}}
}

func getOrEmpty(key string) *api.TxnOp {
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetOrEmpty, Key: key}}
}

// TestTwinIndex: an empty store is at index 1 (a blocking query never
// sees 0); a committed write moves it by one; reads and rolled-back
// transactions leave it.
func TestTwinIndex(t *testing.T) {
	tw := consulkvtest.NewTwin()
	if tw.Index() != 1 {
		t.Fatalf("empty store at index %d, want 1", tw.Index())
	}
	ctx := t.Context()
	res, _, err := tw.Txn(ctx, api.TxnOps{set("a", "1"), set("b", "2")})
	if err != nil || res[0].KV.ModifyIndex != 2 || tw.Index() != 2 {
		t.Fatalf("first write at %d, store at %d (%v); want both 2", res[0].KV.ModifyIndex, tw.Index(), err)
	}
	if _, _, err := tw.Txn(ctx, api.TxnOps{getOrEmpty("a")}); err != nil || tw.Index() != 2 {
		t.Fatalf("a read moved the index to %d (%v)", tw.Index(), err)
	}
	_, errs, _ := tw.Txn(ctx, api.TxnOps{set("c", "3"), {KV: &api.KVTxnOp{Verb: api.KVCAS, Key: "a", Index: 1}}})
	if len(errs) != 1 || tw.Index() != 2 {
		t.Fatalf("a rolled-back write: errors %v, index %d; want one error, index 2", errs, tw.Index())
	}
}

// TestTwinChunking: MaxTxnOps operations go in one transaction, one more
// is refused as Consul refuses it; Batches cuts a long list so that each
// transaction is accepted.
func TestTwinChunking(t *testing.T) {
	tw := consulkvtest.NewTwin()
	ctx := t.Context()
	for _, n := range []int{consulkv.MaxTxnOps, consulkv.MaxTxnOps + 1} {
		ops := make(api.TxnOps, n)
		for i := range ops {
			ops[i] = set(fmt.Sprintf("k/%d", i), "v")
		}
		_, _, err := tw.Txn(ctx, ops)
		switch {
		case n <= consulkv.MaxTxnOps && err != nil:
			t.Errorf("%d operations: %v", n, err)
		case n > consulkv.MaxTxnOps && consulkv.Classify(err, true) != consulkv.KindRefused:
			t.Errorf("%d operations = %v; want refused", n, err)
		}
		head := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: "absent"}}}
		batches, err := consulkv.Batches(head, ops, 0)
		if err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, b := range batches {
			if _, errs, err := tw.Txn(ctx, b); err != nil || len(errs) != 0 {
				t.Fatalf("a batch of %d: %v %v", len(b), err, errs)
			}
			sent += len(b) - len(head)
		}
		if want := (n + consulkv.MaxTxnOps - 2) / (consulkv.MaxTxnOps - 1); len(batches) != want || sent != n {
			t.Errorf("%d operations in %d batches (%d sent), want %d", n, len(batches), sent, want)
		}
	}
}

// TestTwinFailures: injected faults come back as the errors the real
// client gives, and Classify reads each class; a lost answer's write was
// applied.
func TestTwinFailures(t *testing.T) {
	dial := &url.Error{Op: "Put", URL: "http://127.0.0.1:1/v1/txn", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	reset := &url.Error{Op: "Put", URL: "http://127.0.0.1:8500/v1/txn", Err: errors.New("connection reset by peer")}
	for _, tc := range []struct {
		name    string
		err     error
		applied bool
		want    consulkv.Kind
	}{
		{"unreachable", dial, false, consulkv.KindUnavailable},
		{"no leader", api.StatusError{Code: 500, Body: "No cluster leader"}, false, consulkv.KindUnavailable},
		{"rate limited", api.StatusError{Code: 429, Body: "rate limit exceeded"}, false, consulkv.KindUnavailable},
		{"malformed", api.StatusError{Code: 400, Body: "Failed to parse body"}, false, consulkv.KindRefused},
		{"permission", api.StatusError{Code: 403, Body: "Permission denied"}, false, consulkv.KindPermission},
		{"lost answer", reset, true, consulkv.KindOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tw := consulkvtest.NewTwin()
			tw.FailNext(tc.err, tc.applied)
			_, _, err := tw.Txn(t.Context(), api.TxnOps{set("k", "v")})
			if !errors.Is(err, tc.err) || consulkv.Classify(err, true) != tc.want {
				t.Fatalf("Txn = %v (%v), want %v", err, consulkv.Classify(err, true), tc.want)
			}
			kv, _, err := tw.Get(t.Context(), "k", consulkv.Query{})
			if err != nil || (kv != nil) != tc.applied {
				t.Fatalf("after the fault the key is %+v (%v); applied should be %v", kv, err, tc.applied)
			}
		})
	}
}

// TestTwinDeny: a denied write fails as Consul fails it, in a transaction
// (a per-operation permission text) and as a plain write (HTTP 403).
func TestTwinDeny(t *testing.T) {
	tw := consulkvtest.NewTwin()
	tw.Deny("p/offsets/")
	ctx := t.Context()
	_, errs, err := tw.Txn(ctx, api.TxnOps{set("p/other", "1"), set("p/offsets/s", "1")})
	if err != nil || len(errs) != 1 || errs[0].OpIndex != 1 || consulkv.ClassifyRefusal(errs[0].What) != consulkv.RefusedPermission {
		t.Fatalf("denied write in a transaction = %v, %v", errs, err)
	}
	if _, err := tw.CAS(ctx, &api.KVPair{Key: "p/offsets/s"}); consulkv.Classify(err, true) != consulkv.KindPermission {
		t.Fatalf("denied CAS = %v", err)
	}
	if res, _, err := tw.Txn(ctx, api.TxnOps{getOrEmpty("p/offsets/s")}); err != nil || len(res) != 1 {
		t.Fatalf("a read under a write-denied prefix = %v, %v", res, err)
	}
}

// TestTwinSessionRelease: a destroyed session's locks are released in one
// write, values kept.
func TestTwinSessionRelease(t *testing.T) {
	tw := consulkvtest.NewTwin()
	ctx := t.Context()
	s := tw.CreateSession()
	lock := func(k string) *api.TxnOp {
		return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVLock, Key: k, Value: []byte("held"), Session: s}}
	}
	if _, errs, err := tw.Txn(ctx, api.TxnOps{lock("a"), lock("b")}); err != nil || len(errs) != 0 {
		t.Fatal(errs, err)
	}
	before := tw.Index()
	tw.DestroySession(s)
	for _, k := range []string{"a", "b"} {
		kv, _, _ := tw.Get(ctx, k, consulkv.Query{})
		if kv == nil || kv.Session != "" || string(kv.Value) != "held" || kv.ModifyIndex != before+1 {
			t.Fatalf("%s after its session ended = %+v; want free, value kept, at index %d", k, kv, before+1)
		}
	}
	_, errs, _ := tw.Txn(ctx, api.TxnOps{lock("c")})
	if len(errs) != 1 || consulkv.ClassifyRefusal(errs[0].What) != consulkv.RefusedBadSession {
		t.Fatalf("lock with an ended session: %v", errs)
	}
}

// TestTwinBlockingQueries: a blocking get returns at once when its index
// is behind, waits for the key's own write, ignores other keys' writes,
// and returns the index as it is when its wait ends.
func TestTwinBlockingQueries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := consulkvtest.NewTwin()
		ctx := context.Background()
		if _, _, err := tw.Txn(ctx, api.TxnOps{set("watched", "1")}); err != nil {
			t.Fatal(err)
		}
		kv, meta, _ := tw.Get(ctx, "watched", consulkv.Query{WaitIndex: 1, WaitTime: time.Minute})
		if kv == nil || meta.LastIndex != 2 {
			t.Fatalf("behind: %+v at %d, want at once at 2", kv, meta.LastIndex)
		}

		type answer struct {
			idx uint64
			at  time.Duration
		}
		start := time.Now()
		done := make(chan answer, 1)
		go func() {
			_, meta, _ := tw.Get(ctx, "watched", consulkv.Query{WaitIndex: 2, WaitTime: time.Minute})
			done <- answer{meta.LastIndex, time.Since(start)}
		}()
		synctest.Wait()
		_, _, _ = tw.Txn(ctx, api.TxnOps{set("other", "x")})
		synctest.Wait()
		select {
		case a := <-done:
			t.Fatalf("another key's write ended the watch at %d", a.idx)
		default:
		}
		time.Sleep(10 * time.Second)
		_, _, _ = tw.Txn(ctx, api.TxnOps{set("watched", "2")})
		if a := <-done; a.idx != 4 || a.at != 10*time.Second {
			t.Fatalf("woken at index %d after %v, want 4 after 10s", a.idx, a.at)
		}

		go func() {
			_, meta, _ := tw.Get(ctx, "missing", consulkv.Query{WaitIndex: tw.Index(), WaitTime: time.Minute})
			done <- answer{meta.LastIndex, time.Since(start)}
		}()
		synctest.Wait()
		_, _, _ = tw.Txn(ctx, api.TxnOps{set("other", "y")})
		if a := <-done; a.idx != 5 || a.at != 70*time.Second {
			t.Fatalf("a watch of a missing key returned at index %d after %v; want the store's 5 at its wait's end, 70s", a.idx, a.at)
		}
	})
}
