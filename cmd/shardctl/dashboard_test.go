package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

// TestDashboardCommand: shardctl dashboard prints its URL and serves the
// fleet's JSON and page until interrupted.
func TestDashboardCommand(t *testing.T) {
	ctx := context.Background()
	c := memory.New()
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 3}); err != nil {
		t.Fatal(err)
	}
	sid, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "w1", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Sessions().Destroy(ctx, sid)
	if err := c.Members().Join(ctx, sid, shard.Member{ID: "w1", Version: "v3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Locks().Acquire(ctx, sid, []shard.Acquisition{shard.AcquireShard("stream/shard-001", "initial: never owned")}); err != nil {
		t.Fatal(err)
	}

	a, out, errOut := newApp("")
	a.connect = func(cf connFlags) (*fleetConn, error) {
		return &fleetConn{coord: c, name: cf.consul.Prefix, addr: "the embedded coordinator"}, nil
	}
	runCtx, cancel := context.WithCancel(ctx)
	code := make(chan int, 1)
	go func() { code <- a.run(runCtx, []string{"dashboard", "-prefix", "orders", "-http", "127.0.0.1:0"}) }()

	urlRE := regexp.MustCompile(`^dashboard of orders: (http://127\.0\.0\.1:\d+/)  \(JSON: /api/v1/fleet\)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no URL printed: %q %q", out, errOut)
		}
	}
	var f fleetview.Fleet
	for deadline := time.Now().Add(10 * time.Second); f.Config == nil; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(base + "api/v1/fleet")
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&f)
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("no fleet served within 10s")
		}
	}
	if s, _ := f.Shard("stream/shard-001"); f.Name != "orders" || s.Owner != "w1" || f.Summary.Owned != 1 || f.Summary.Free != 2 {
		t.Errorf("served fleet %+v", f.Summary)
	}
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("page: %d", resp.StatusCode)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Errorf("dashboard exited %d after Ctrl-C: %s", c, errOut)
	}
}
