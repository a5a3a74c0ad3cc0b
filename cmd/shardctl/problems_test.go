package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestStatusShowsConfigRewritten: P/config rewritten under a running fleet
// on a real Consul, to a smaller shard count. shardctl cannot know the
// config the workers run, but status, plain and -json, says that shard
// keys outside the stored config are held and how to read that, and still
// lists each of them.
func TestStatusShowsConfigRewritten(t *testing.T) {
	agent := consultest.StartDev(t)
	prefix := "shardctl-test/" + randomName()
	cfg := consul.DefaultConfig()
	cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile, cfg.Prefix = agent.HTTPAddr, "http", agent.Token, "", prefix
	worker, err := consul.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Close)
	ctx := t.Context()
	runs, err := worker.Fleet().Configure(ctx, shard.Config{Shards: 12})
	if err != nil {
		t.Fatal(err)
	}
	sid, err := worker.Sessions().Create(ctx, shard.SessionSpec{Worker: "w1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Sessions().Destroy(context.Background(), sid) })
	if err := worker.Members().Join(ctx, sid, shard.Member{ID: "w1", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	var want []shard.Acquisition
	for _, id := range runs.IDs() {
		want = append(want, shard.AcquireShard(id, "initial: never owned"))
	}
	if _, err := worker.Locks().Acquire(ctx, sid, want); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Client(t).KV().Put(&api.KVPair{Key: prefix + "/config", Value: []byte(`{"shards":8}`)}, nil); err != nil {
		t.Fatal(err)
	}

	status := func(args ...string) string {
		t.Helper()
		a, out, errOut := newApp("")
		if code := a.run(ctx, append([]string{"status", "-consul", agent.HTTPAddr, "-prefix", prefix}, args...)); code != 0 {
			t.Fatalf("status %v: exit %d: %s", args, code, errOut)
		}
		return out.String()
	}
	summary := prefix + `/config: 4 shard keys outside the stored config {shards 8, name "stream/shard"} are held (stream/shard-008 … stream/shard-011)`
	perKey := prefix + "/shards/stream/shard-011: not one of the fleet's shards"

	plain := status()
	_, problems, ok := strings.Cut(plain, "PROBLEMS under the prefix")
	if !ok || !strings.Contains(problems, summary) || !strings.Contains(problems, perKey) {
		t.Errorf("status does not list the problems %q and %q:\n%s", summary, perKey, plain)
	}

	var f fleetview.Fleet
	if err := json.Unmarshal([]byte(status("-json")), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Problems) == 0 || !strings.HasPrefix(f.Problems[0], summary) || !strings.Contains(strings.Join(f.Problems, "\n"), perKey) {
		t.Errorf("status -json problems = %q, want %q first and %q", f.Problems, summary, perKey)
	}
}
