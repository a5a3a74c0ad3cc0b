package consulkvtest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/harness/consulkvtest"
)

// backend is one KV under test: the twin or a real agent.
type backend struct {
	kv         consulkv.KV
	newSession func(t *testing.T) string
	prefix     string
}

// conformance runs the cases both backends must answer alike. The twin's
// answers are what the unit tests of the backends rely on; running them
// against a real agent keeps the twin from drifting from Consul.
func conformance(t *testing.T, b backend) {
	ctx := t.Context()
	key := func(name string) string { return b.prefix + "/" + name }
	txn := func(t *testing.T, ops ...*api.TxnOp) (api.TxnResults, api.TxnErrors) {
		t.Helper()
		res, errs, err := b.kv.Txn(ctx, ops)
		if err != nil {
			t.Fatalf("Txn: %v", err)
		}
		return res, errs
	}
	kvOp := func(verb api.KVOp, k string, mods ...func(*api.KVTxnOp)) *api.TxnOp {
		op := &api.KVTxnOp{Verb: verb, Key: k}
		for _, m := range mods {
			m(op)
		}
		return &api.TxnOp{KV: op}
	}
	value := func(v string) func(*api.KVTxnOp) { return func(op *api.KVTxnOp) { op.Value = []byte(v) } }
	index := func(i uint64) func(*api.KVTxnOp) { return func(op *api.KVTxnOp) { op.Index = i } }
	session := func(s string) func(*api.KVTxnOp) { return func(op *api.KVTxnOp) { op.Session = s } }
	refusals := func(errs api.TxnErrors) map[int]consulkv.Refusal {
		out := map[int]consulkv.Refusal{}
		for _, e := range errs {
			out[e.OpIndex] = consulkv.ClassifyRefusal(e.What)
		}
		return out
	}

	t.Run("check-and-set", func(t *testing.T) {
		k := key("cas")
		if ok, err := b.kv.CAS(ctx, &api.KVPair{Key: k, Value: []byte("1")}); err != nil || !ok {
			t.Fatalf("CAS create = %v, %v; want true", ok, err)
		}
		if ok, err := b.kv.CAS(ctx, &api.KVPair{Key: k, Value: []byte("2")}); err != nil || ok {
			t.Fatalf("CAS create of an existing key = %v, %v; want false", ok, err)
		}
		kv, _, err := b.kv.Get(ctx, k, consulkv.Query{})
		if err != nil || kv == nil || string(kv.Value) != "1" {
			t.Fatalf("Get = %+v, %v", kv, err)
		}
		res, errs := txn(t, kvOp(api.KVCAS, k, value("3"), index(kv.ModifyIndex)))
		if len(errs) != 0 || len(res) != 1 || res[0].KV.ModifyIndex <= kv.ModifyIndex {
			t.Fatalf("txn CAS at the current index = %+v, %q; want one result with a higher index", res, consulkv.Rollback(errs))
		}
		// The old index is stale now; the whole transaction rolls back.
		_, errs = txn(t, kvOp(api.KVSet, key("cas-other"), value("x")), kvOp(api.KVCAS, k, value("4"), index(kv.ModifyIndex)))
		if got := refusals(errs); len(got) != 1 || got[1] != consulkv.RefusedStaleIndex {
			t.Fatalf("CAS at a stale index: refusals %v (%q), want op 1 stale", got, consulkv.Rollback(errs))
		}
		if other, _, _ := b.kv.Get(ctx, key("cas-other"), consulkv.Query{}); other != nil {
			t.Fatalf("a rolled-back transaction's set was applied: %+v", other)
		}
	})

	t.Run("reads of a missing key", func(t *testing.T) {
		k := key("missing")
		res, errs := txn(t, kvOp(api.KVGetOrEmpty, k), kvOp(api.KVGetTree, k))
		if len(errs) != 0 || len(res) != 1 || res[0].KV.Key != k || res[0].KV.ModifyIndex != 0 {
			t.Fatalf("get-or-empty and get-tree of a missing key = %+v, %q; want one empty entry at index 0", res, consulkv.Rollback(errs))
		}
		_, errs = txn(t, kvOp(api.KVGet, k))
		if got := refusals(errs); got[0] != consulkv.RefusedKeyMissing {
			t.Fatalf("get of a missing key: refusals %v (%q)", got, consulkv.Rollback(errs))
		}
		kv, meta, err := b.kv.Get(ctx, k, consulkv.Query{})
		if err != nil || kv != nil || meta.LastIndex == 0 {
			t.Fatalf("Get of a missing key = %+v, %+v, %v; want nil at a nonzero index", kv, meta, err)
		}
	})

	t.Run("locks", func(t *testing.T) {
		s1, s2 := b.newSession(t), b.newSession(t)
		k := key("lock")
		res, errs := txn(t, kvOp(api.KVLock, k, value("a"), session(s1)), kvOp(api.KVGet, k))
		if len(errs) != 0 || len(res) != 2 || res[1].KV.Session != s1 || res[0].KV.ModifyIndex != res[1].KV.ModifyIndex {
			t.Fatalf("lock and get = %+v, %q", res, consulkv.Rollback(errs))
		}
		// Every failed operation is reported: the held lock, and the get
		// of a key whose lock (with a bad session) failed.
		bad := "00000000-0000-0000-0000-000000000000"
		_, errs = txn(t, kvOp(api.KVLock, k, value("b"), session(s2)), kvOp(api.KVLock, key("lock-new"), session(bad)), kvOp(api.KVGet, key("lock-new")))
		got := refusals(errs)
		if got[0] != consulkv.RefusedHeld || got[1] != consulkv.RefusedBadSession || got[2] != consulkv.RefusedKeyMissing {
			t.Fatalf("refusals %v (%q); want held, bad session, key missing", got, consulkv.Rollback(errs))
		}
		_, errs = txn(t, kvOp(api.KVUnlock, k, session(s2)))
		if got := refusals(errs); got[0] != consulkv.RefusedNotHeld {
			t.Fatalf("unlock by another session: refusals %v (%q)", got, consulkv.Rollback(errs))
		}
		_, errs = txn(t, kvOp(api.KVCheckSession, k, session(s2)), kvOp(api.KVCheckIndex, k, index(1)))
		if got := refusals(errs); got[0] != consulkv.RefusedCheckFailed || got[1] != consulkv.RefusedCheckFailed {
			t.Fatalf("failed checks: refusals %v (%q)", got, consulkv.Rollback(errs))
		}
		if _, errs = txn(t, kvOp(api.KVUnlock, k, value("a"), session(s1))); len(errs) != 0 {
			t.Fatalf("unlock by the holder: %q", consulkv.Rollback(errs))
		}
		if kv, _, err := b.kv.Get(ctx, k, consulkv.Query{}); err != nil || kv == nil || kv.Session != "" {
			t.Fatalf("after the unlock = %+v, %v; want the key kept, free", kv, err)
		}
	})

	t.Run("one index per transaction", func(t *testing.T) {
		res, errs := txn(t, kvOp(api.KVSet, key("i1"), value("1")), kvOp(api.KVSet, key("i2"), value("2")))
		if len(errs) != 0 || len(res) != 2 || res[0].KV.ModifyIndex != res[1].KV.ModifyIndex || res[0].KV.Value != nil {
			t.Fatalf("two sets = %+v, %q; want one index, values blanked", res, consulkv.Rollback(errs))
		}
		res2, _ := txn(t, kvOp(api.KVSet, key("i1"), value("3")))
		if res2[0].KV.ModifyIndex <= res[0].KV.ModifyIndex || res2[0].KV.CreateIndex != res[0].KV.CreateIndex {
			t.Fatalf("a later write = %+v after %+v", res2[0].KV, res[0].KV)
		}
	})

	t.Run("128 operations", func(t *testing.T) {
		ops := make(api.TxnOps, consulkv.MaxTxnOps)
		for i := range ops {
			ops[i] = kvOp(api.KVGetOrEmpty, key(fmt.Sprintf("many/%d", i)))
		}
		if res, errs := txn(t, ops...); len(res) != consulkv.MaxTxnOps || len(errs) != 0 {
			t.Fatalf("%d reads = %d results, %q", len(ops), len(res), consulkv.Rollback(errs))
		}
	})

	t.Run("deletes", func(t *testing.T) {
		k := key("del")
		if ok, err := b.kv.CAS(ctx, &api.KVPair{Key: k, Value: []byte("1")}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		kv, _, _ := b.kv.Get(ctx, k, consulkv.Query{})
		if ok, err := b.kv.DeleteCAS(ctx, &api.KVPair{Key: k, ModifyIndex: kv.ModifyIndex + 1000}); err != nil || ok {
			t.Fatalf("DeleteCAS at a wrong index = %v, %v; want false", ok, err)
		}
		if ok, err := b.kv.DeleteCAS(ctx, &api.KVPair{Key: k, ModifyIndex: kv.ModifyIndex}); err != nil || !ok {
			t.Fatalf("DeleteCAS at its index = %v, %v; want true", ok, err)
		}
		if err := b.kv.DeleteTree(ctx, b.prefix+"/many/"); err != nil {
			t.Fatal(err)
		}
		pairs, _, err := b.kv.List(ctx, b.prefix+"/many/", consulkv.Query{})
		if err != nil || len(pairs) != 0 {
			t.Fatalf("List after DeleteTree = %d keys, %v", len(pairs), err)
		}
	})

	t.Run("keys one level down", func(t *testing.T) {
		for _, name := range []string{"tree/a/1", "tree/a/2", "tree/b", "tree/c/d/e"} {
			if ok, err := b.kv.CAS(ctx, &api.KVPair{Key: key(name), Value: []byte("v")}); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		names, meta, err := b.kv.Keys(ctx, key("tree/"), "/", consulkv.Query{})
		want := []string{key("tree/a/"), key("tree/b"), key("tree/c/")}
		if err != nil || fmt.Sprint(names) != fmt.Sprint(want) {
			t.Fatalf("Keys = %v, %v; want %v", names, err, want)
		}
		_, lmeta, _ := b.kv.List(ctx, key("tree/"), consulkv.Query{})
		if meta.LastIndex != lmeta.LastIndex {
			t.Fatalf("Keys' index %d, List's %d: want the same", meta.LastIndex, lmeta.LastIndex)
		}
		// One name for a whole subtree: a cheap probe of its index, moved
		// by a deletion too.
		names, before, _ := b.kv.Keys(ctx, key("tree/a"), "/", consulkv.Query{})
		if fmt.Sprint(names) != fmt.Sprint([]string{key("tree/a/")}) {
			t.Fatalf("Keys(tree/a) = %v; want one name", names)
		}
		if err := b.kv.Delete(ctx, key("tree/a/2")); err != nil {
			t.Fatal(err)
		}
		_, after, _ := b.kv.Keys(ctx, key("tree/a"), "/", consulkv.Query{})
		if after.LastIndex <= before.LastIndex {
			t.Fatalf("Keys(tree/a) index %d after a deletion under it, %d before: want it moved", after.LastIndex, before.LastIndex)
		}
	})

	t.Run("blocking get", func(t *testing.T) {
		k := key("watched")
		if ok, err := b.kv.CAS(ctx, &api.KVPair{Key: k, Value: []byte("1")}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		kv, meta, _ := b.kv.Get(ctx, k, consulkv.Query{})
		if meta.LastIndex != kv.ModifyIndex {
			t.Fatalf("index %d of an existing key, want its ModifyIndex %d", meta.LastIndex, kv.ModifyIndex)
		}
		type answer struct {
			kv  *api.KVPair
			idx uint64
			err error
		}
		done := make(chan answer, 1)
		go func() {
			kv, meta, err := b.kv.Get(ctx, k, consulkv.Query{WaitIndex: meta.LastIndex, WaitTime: 10 * time.Second})
			done <- answer{kv, meta.LastIndex, err}
		}()
		if ok, err := b.kv.CAS(ctx, &api.KVPair{Key: k, Value: []byte("2"), ModifyIndex: kv.ModifyIndex}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		a := <-done
		if a.err != nil || a.kv == nil || string(a.kv.Value) != "2" || a.idx <= kv.ModifyIndex {
			t.Fatalf("blocking get woken by a write = %+v at %d, %v", a.kv, a.idx, a.err)
		}
	})

	t.Run("a done context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, _, err := b.kv.Get(cctx, key("x"), consulkv.Query{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Get with a cancelled context = %v", err)
		}
	})
}

func TestTwinConformance(t *testing.T) {
	tw := consulkvtest.NewTwin()
	conformance(t, backend{kv: tw, prefix: "p", newSession: func(*testing.T) string { return tw.CreateSession() }})
}
