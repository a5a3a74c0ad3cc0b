package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	offetcd "github.com/shardlease/shardlease/offsets/etcd"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/etcd"
	"github.com/shardlease/shardlease/worker"
)

// TestAgainstEtcd runs shardctl --etcd against a real fleet on etcd: three
// workers, each with its own etcd coordinator and offsets store as
// separate processes would have. status -json lists every shard with its
// owner and token (the revision that took the lock) and, with -offsets
// etcd, the floor the owner fenced with it; drain and release work on
// sessions shardctl did not create.
func TestAgainstEtcd(t *testing.T) {
	cluster := etcdtest.Start(t)
	prefix := "shardctl-test/" + randomName()
	const shards = 12
	newCoord := func() (*etcd.Coordinator, *clientv3.Client) {
		cli, err := etcd.Connection{Endpoints: cluster.Endpoints()}.Dial(nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := etcd.New(etcd.Config{Client: cli, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); cli.Close() })
		return c, cli
	}
	for _, id := range []string{"w1", "w2", "w3"} {
		coord, cli := newCoord()
		store, err := offetcd.New(offetcd.Config{Client: cli, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		w, err := worker.New(worker.Config{
			ID: id, Fleet: shard.Config{Shards: shards}, Coordinator: coord, Offsets: store,
			Policy:  shard.LeasePolicy{TTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second},
			Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error { <-ctx.Done(); return nil }),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	observer, cli := newCoord()
	waitFor(t, 30*time.Second, "every shard owned, 4 each", func() (bool, string) {
		f := view(t, observer, prefix)
		return f.Summary.Owned == shards && f.Summary.Imbalance == 0 && f.Summary.Live == 3, headline(f)
	})

	ctl := func(args ...string) (int, string, string) {
		a, out, errOut := newApp("")
		args = append(args[:1:1], append([]string{"--etcd", strings.Join(cluster.Endpoints(), ","), "-prefix", prefix}, args[1:]...)...)
		code := a.run(t.Context(), args)
		return code, out.String(), errOut.String()
	}
	var f fleetview.Fleet
	waitFor(t, 30*time.Second, "floor fenced with its owner's token on every shard", func() (bool, string) {
		code, out, errOut := ctl("status", "-json", "-offsets", "etcd")
		if code != 0 {
			t.Fatalf("status -json: exit %d: %s", code, errOut)
		}
		f = fleetview.Fleet{}
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			t.Fatalf("status -json: %v\n%s", err, out)
		}
		for _, s := range f.Shards {
			if s.Floor == nil || *s.Floor != s.Token {
				return false, fmt.Sprintf("%s: floor %v, want the owner's token %d fenced in etcd", s.ID, s.Floor, s.Token)
			}
		}
		return f.HasOffsets, "no offsets shown"
	})
	for _, s := range f.Shards {
		resp, err := cli.Get(t.Context(), prefix+"/shards/"+string(s.ID))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading %s: %v", s.ID, err)
		}
		if s.State != fleetview.ShardOwned || s.Owner == "" || s.Token != shard.Token(resp.Kvs[0].ModRevision) {
			t.Errorf("%s: %s by %q with token %d; etcd says revision %d", s.ID, s.State, s.Owner, s.Token, resp.Kvs[0].ModRevision)
		}
	}

	code, out, errOut := ctl("drain", "-timeout", "60s", "w2")
	if code != 0 || !strings.Contains(out, "w2 drained in") {
		t.Fatalf("drain: exit %d: %s%s", code, out, errOut)
	}
	before := view(t, observer, prefix).Shards[0]
	code, out, errOut = ctl("release", "-yes", "0")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("released stream/shard-000 (was %s, token %d)", before.Owner, before.Token)) {
		t.Fatalf("release: exit %d: %s%s", code, out, errOut)
	}
	waitFor(t, 30*time.Second, "stream/shard-000 owned again above its old token", func() (bool, string) {
		after := view(t, observer, prefix).Shards[0]
		return after.State == fleetview.ShardOwned && after.Token > before.Token, fmt.Sprintf("%+v", after)
	})
	if code, out, errOut := ctl("status", "-offsets", "consul"); code != exitBadInvoke || !strings.Contains(errOut, "use -offsets etcd") {
		t.Errorf("status -offsets consul on an etcd fleet: exit %d: %s%s", code, out, errOut)
	}
}

// TestEngineFlagsNotMixed: Consul's flags beside --etcd, and etcd's
// without it, are refused naming them, before anything is reached.
func TestEngineFlagsNotMixed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "-prefix", "p", "--etcd", "127.0.0.1:1", "-consul-token", "t"}, "-consul-token: Consul's, but the fleet is read on etcd (--etcd): drop them"},
		{[]string{"status", "-prefix", "p", "--etcd-cacert", "/ca.pem"}, "--etcd-cacert: etcd's, but --etcd is not given"},
		{[]string{"status", "-prefix", "p", "--etcd", "127.0.0.1:1", "--etcd-user", "bob"}, `user "bob" has no password`},
	} {
		a, out, errOut := newApp("")
		code := a.run(t.Context(), tc.args)
		if code != exitBadInvoke || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("shardctl %v: exit %d, stdout %q, stderr %q; want 2 naming %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
