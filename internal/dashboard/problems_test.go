package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestProblemsShown: P/config rewritten under a running fleet on a real
// Consul. The coordinator's problems reach /api/v1/fleet and the page: on
// a dashboard over the worker's own coordinator, the stored config against
// the one the fleet runs; on one over an operator's coordinator (what
// shardctl dashboard opens), the held shard keys outside the stored config.
// The page is read in headless Chromium.
func TestProblemsShown(t *testing.T) {
	agent := consultest.StartDev(t)
	prefix := "dashboard-test/problems"
	coordinator := func() *consul.Coordinator {
		cfg := consul.DefaultConfig()
		cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile, cfg.Prefix = agent.HTTPAddr, "http", agent.Token, "", prefix
		c, err := consul.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	ctx := t.Context()
	worker := coordinator()
	runs, err := worker.Fleet().Configure(ctx, shard.Config{Shards: 16})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing renews this session: its TTL must outlast both subtests on
	// a loaded machine (87 s were seen), or its locks go and the held keys
	// the operator's view reports with them.
	sid, err := worker.Sessions().Create(ctx, shard.SessionSpec{Worker: "w1", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Sessions().Destroy(context.Background(), sid) })
	if err := worker.Members().Join(ctx, sid, shard.Member{ID: "w1", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	want := make([]shard.Acquisition, 0, runs.Shards)
	for _, id := range runs.IDs() {
		want = append(want, shard.AcquireShard(id, shard.Why{Reason: shard.ReasonInitial}))
	}
	if _, err := worker.Locks().Acquire(ctx, sid, want); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Client(t).KV().Put(&api.KVPair{Key: prefix + "/config", Value: []byte(`{"shards":8,"name":"stream/shard"}`)}, nil); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name  string
		coord *consul.Coordinator
		want  string
	}{
		{"worker's coordinator", worker, `stored config {shards 8, name "stream/shard"} differs from the one this fleet runs {shards 16, name "stream/shard"}`},
		{"operator's coordinator", coordinator(), `8 shard keys outside the stored config {shards 8, name "stream/shard"} are held`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := serve(t, dashboard.Options{Name: prefix, Coordinator: tt.coord})
			f := fleetJSON(t, base, func(f fleetview.Fleet) bool { return f.Config != nil })
			if !hasProblem(f.Problems, prefix+"/config: ", tt.want) {
				t.Fatalf("/api/v1/fleet problems %q, want one on %s/config saying %q", f.Problems, prefix, tt.want)
			}

			wd := startBrowser(t)
			wd.navigate(base + "/")
			var shown []string
			for deadline := time.Now().Add(20 * time.Second); ; {
				if err := wd.eval(`const p = document.getElementById('problems');
return p.hidden ? [] : [...p.querySelectorAll('li')].map(li => li.textContent);`, &shown); err != nil {
					t.Fatalf("reading the page: %v", err)
				}
				if hasProblem(shown, prefix+"/config: ", tt.want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the page's problems %q do not say %q", shown, tt.want)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

func hasProblem(problems []string, prefix, part string) bool {
	for _, p := range problems {
		if strings.HasPrefix(p, prefix) && strings.Contains(p, part) {
			return true
		}
	}
	return false
}
