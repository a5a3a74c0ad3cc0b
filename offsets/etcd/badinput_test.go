package etcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/etcd"
	"github.com/shardlease/shardlease/shard"
)

// wantErr fails unless err wraps target and names every one of says.
func wantErr(t *testing.T, err, target error, says ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%v, want %v", err, target)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%v does not say %q", err, s)
		}
	}
}

// TestBadConfig: every problem is named at once.
func TestBadConfig(t *testing.T) {
	_, err := etcd.New(etcd.Config{Prefix: "/x/", RequestTimeout: -time.Second})
	wantErr(t, err, shard.ErrInvalidArgument, "no Client", `prefix "/x/"`, "request timeout -1s")
}

// TestCorruptValueIsReportedNotObeyed: a value under a shard's key that is
// not a record, or breaks the rule, fails that shard's loads, fences and
// commits, naming the key, and is never overwritten; other shards work.
func TestCorruptValueIsReportedNotObeyed(t *testing.T) {
	c := etcdtest.Start(t)
	ctx := t.Context()
	prefix := freshPrefix()
	st := newStore(t, c, prefix)
	cli := client(t, c)
	const bad, good = shard.ID("stream/shard-001"), shard.ID("stream/shard-002")
	for _, tc := range []struct{ value, says string }{
		{"not json", "is not an offsets record"},
		{`{"v":1,"offset":5,"token":9,"floor":3}`, "token 9 above floor 3"},
		{`{"v":2,"offset":1,"token":1,"floor":1}`, "record version 2"},
	} {
		if _, err := cli.Put(ctx, st.Key(bad), tc.value); err != nil {
			t.Fatal(err)
		}
		_, err := st.Load(ctx, bad)
		wantErr(t, err, offsets.ErrCorrupt, string(bad), st.Key(bad), tc.says)
		wantErr(t, st.Commit(ctx, bad, 100, 1), offsets.ErrCorrupt, tc.says)
		wantErr(t, st.Fence(ctx, bad, 100), offsets.ErrCorrupt, tc.says)
		if resp, err := cli.Get(ctx, st.Key(bad)); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != tc.value {
			t.Fatalf("the corrupt value was changed: %v %v", resp, err)
		}
	}
	if err := st.Commit(ctx, good, 1, 7); err != nil {
		t.Fatalf("another shard: %v", err)
	}
}

// TestUnreachable: with the cluster down a load and a commit are
// ErrUnavailable, naming the shard (a commit reads the key first, and
// writes nothing when the read fails); a done context and a closed store
// are refused before any request.
func TestUnreachable(t *testing.T) {
	c := etcdtest.Start(t)
	st, err := etcd.New(etcd.Config{Client: client(t, c), Prefix: freshPrefix(), RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const s = shard.ID("stream/shard-003")
	if err := st.Commit(t.Context(), s, 1, 1); err != nil {
		t.Fatal(err)
	}
	c.Members[0].Kill()
	_, err = st.Load(t.Context(), s)
	wantErr(t, err, offsets.ErrUnavailable, "load shard "+string(s))
	wantErr(t, st.Commit(t.Context(), s, 2, 2), offsets.ErrUnavailable, "commit shard "+string(s))
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := st.Load(done, s); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Fence(t.Context(), s, 3); !errors.Is(err, offsets.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}
