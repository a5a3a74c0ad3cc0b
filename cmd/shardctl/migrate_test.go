package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/internal/harness/pgtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
	"github.com/shardlease/shardlease/worker"
)

// TestMoveFromConsulToEtcd follows docs/operations.md's "Moving a fleet
// from Consul to etcd": a fleet on Consul with its offsets in PostgreSQL
// is stopped and started again on etcd; its fences are refused (etcd's
// revisions are below the floors Consul's history left, pushed here to
// 10^6, as a long-lived Consul's would be) until shardctl recover --etcd
// raises the generation; then every shard runs again from the offset it
// had reached, never an earlier one.
func TestMoveFromConsulToEtcd(t *testing.T) {
	agent := consultest.StartDev(t)
	cluster := etcdtest.Start(t)
	dsn := pgtest.Start(t).NewDatabase(t)
	prefix := "shardctl-test/" + randomName()
	const shards = 8
	store, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	counting := worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		for off := c.Start.Offset; ; {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(20 * time.Millisecond):
			}
			if err := c.Commit(ctx, off+1); err == nil {
				off++
			}
		}
	})
	run := func(id string, coord shard.Coordinator) func() {
		w, err := worker.New(worker.Config{
			ID: id, Fleet: shard.Config{Shards: shards}, Coordinator: coord, Offsets: store, Handler: counting,
			Policy: shard.LeasePolicy{TTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return func() { cancel(); <-done }
	}
	checkpoints := func() map[shard.ID]offsets.Checkpoint {
		cps := map[shard.ID]offsets.Checkpoint{}
		for _, id := range (shard.Config{Shards: shards}).Normalize().IDs() {
			cp, err := store.Load(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			cps[id] = cp
		}
		return cps
	}

	// On Consul.
	ccfg := consul.DefaultConfig()
	ccfg.Address, ccfg.Scheme, ccfg.Token, ccfg.TokenFile, ccfg.Prefix = agent.HTTPAddr, "http", "", "", prefix
	var stops []func()
	for _, id := range []string{"w1", "w2"} {
		c, err := consul.New(ccfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stops = append(stops, run(id, c))
	}
	waitFor(t, 30*time.Second, "every shard committing on Consul", func() (bool, string) {
		for id, cp := range checkpoints() {
			if cp.Offset < 10 {
				return false, fmt.Sprintf("%s at offset %d", id, cp.Offset)
			}
		}
		return true, ""
	})
	for _, stop := range stops { // 1. stop every worker
		stop()
	}
	before := checkpoints()
	for id := range before {
		if err := store.Fence(t.Context(), id, 1_000_000); err != nil {
			t.Fatal(err)
		}
	}

	// 2. Start them again on etcd: refused until the recovery.
	for _, id := range []string{"w1", "w2"} {
		cli, err := etcd.Connection{Endpoints: cluster.Endpoints()}.Dial(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		c, err := etcd.New(etcd.Config{Client: cli, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		defer run(id, c)()
	}
	ctl := func(stdin string, args ...string) (int, string, string) {
		a, out, errOut := newApp(stdin)
		args = append(args[:1:1], append([]string{"--etcd", strings.Join(cluster.Endpoints(), ","), "-prefix", prefix, "-offsets", dsn}, args[1:]...)...)
		code := a.run(t.Context(), args)
		return code, out.String(), errOut.String()
	}
	// Both workers joined on etcd; their fences are refused (a held
	// shard shows as HISTORY BEHIND in status only while a worker holds it
	// between its paced retries, so the test does not wait for that line).
	waitFor(t, 30*time.Second, "both workers on etcd", func() (bool, string) {
		_, out, _ := ctl("", "status", "-no-shards")
		return strings.Contains(out, "workers 2 live"), out
	})
	for id, cp := range checkpoints() {
		if cp.Floor != 1_000_000 || cp.Offset != before[id].Offset {
			t.Fatalf("%s before the recovery: %+v; want the Consul fleet's offset %d under the floor of 10^6, every fence on etcd refused", id, cp, before[id].Offset)
		}
	}
	code, out, errOut := ctl("", "recover", "-yes")
	if code != 0 || !strings.Contains(out, "8 of 8 shards have offsets floors above every token") || !strings.Contains(out, "every shard owned again") {
		t.Fatalf("recover --etcd: exit %d: %s%s", code, out, errOut)
	}
	// 3. Every shard runs on etcd from where it was.
	waitFor(t, 30*time.Second, "every shard committing on etcd, from its offset on Consul", func() (bool, string) {
		for id, cp := range checkpoints() {
			if cp.Token.Generation() < 1 || cp.Offset <= before[id].Offset {
				return false, fmt.Sprintf("%s at %+v, was at offset %d on Consul", id, cp, before[id].Offset)
			}
		}
		return true, ""
	})
}
