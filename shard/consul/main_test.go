package consul_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newCoordinator returns a coordinator on agent a under a fresh random
// prefix, closed on cleanup. edit, if set, adjusts its config.
func newCoordinator(t *testing.T, a *consultest.Agent, edit func(*consul.Config)) *consul.Coordinator {
	t.Helper()
	cfg := consul.DefaultConfig()
	cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile = a.HTTPAddr, "http", a.Token, ""
	cfg.Prefix = "shardlease-test/" + randomName()
	if edit != nil {
		edit(&cfg)
	}
	c, err := consul.New(cfg)
	if err != nil {
		t.Fatalf("consul.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newSession opens a session and destroys it on cleanup.
func newSession(t *testing.T, c *consul.Coordinator, worker string, ttl, lockDelay time.Duration) shard.SessionID {
	t.Helper()
	id, err := c.Sessions().Create(t.Context(), shard.SessionSpec{Worker: worker, TTL: ttl, LockDelay: lockDelay})
	if err != nil {
		t.Fatalf("CreateSession(%s): %v", worker, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Sessions().Destroy(ctx, id)
	})
	return id
}

func acquire(t *testing.T, c *consul.Coordinator, sid shard.SessionID, ids ...shard.ID) map[shard.ID]shard.Token {
	t.Helper()
	grants, err := c.Locks().Acquire(t.Context(), sid, wantOf(ids...))
	if err != nil {
		t.Fatalf("Acquire(%v): %v", ids, err)
	}
	got := map[shard.ID]shard.Token{}
	for _, cl := range shard.Claims(grants) {
		got[cl.Shard] = cl.Token
	}
	return got
}

// wantOf asks for shards with the reason "test".
func wantOf(ids ...shard.ID) []shard.Acquisition {
	want := make([]shard.Acquisition, len(ids))
	for i, id := range ids {
		want[i] = shard.AcquireShard(id, "test")
	}
	return want
}

func snapshot(t *testing.T, c *consul.Coordinator) shard.Snapshot {
	t.Helper()
	s, err := c.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatalf("Watch(0): %v", err)
	}
	return s
}
