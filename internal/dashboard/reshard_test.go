package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// reshardingFleet is smallFleet resharding 4 shards into 8, started by
// dora, with parent 001 closed: its two children (001 and 005 of 8) may
// open, the other six wait.
func reshardingFleet(t *testing.T) *dashboard.Options {
	t.Helper()
	c, sessions := smallFleet(t)
	ctx := context.Background()
	l := shard.Layout{Shards: 8, Name: "stream/shard.r1", Lineage: shard.LineageMod, Started: shard.Mark{By: "dora", At: time.Now().Add(-time.Minute), Reason: "traffic doubled"}}
	if _, err := c.Fleet().SetLayouts(ctx, nil, []shard.Layout{l}); err != nil {
		t.Fatal(err)
	}
	if err := c.Locks().Release(ctx, sessions["a"], []shard.Lock{shard.ShardLock("stream/shard-001")}, shard.ReasonClosed); err != nil {
		t.Fatal(err)
	}
	return &dashboard.Options{Name: "orders", Coordinator: c}
}

// TestReshardJSONAndBanner: /api/v1/fleet carries the reshard's progress,
// and the page shows it in a banner: to what, who started it, parents
// closed and waiting, children open and waiting.
func TestReshardJSONAndBanner(t *testing.T) {
	base := serve(t, *reshardingFleet(t))
	f := fleetJSON(t, base, func(f fleetview.Fleet) bool { return f.Reshard != nil })
	r := f.Reshard
	if r.Layout.Shards != 8 || len(r.Closed) != 1 || len(r.Open) != 3 || len(r.Openable) != 2 || len(r.Waiting) != 6 {
		t.Fatalf("reshard %+v: want 1 parent closed, 3 open, 2 children openable, 6 waiting", r)
	}
	_, page, _ := get(t, base+"/")
	if !strings.Contains(page, `id="reshard" class="banner resharding" hidden`) {
		t.Error("the page lacks the reshard banner")
	}

	wd := startBrowser(t)
	wd.navigate(base + "/")
	want := "parents 1 closed, 0 closing now, 3 waiting their turn; children 2 open, 6 waiting for a parent."
	for deadline := time.Now().Add(10 * time.Second); ; {
		var banner string
		if err := wd.eval(`const b = document.getElementById('reshard'); return b.hidden ? '' : b.textContent;`, &banner); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		if strings.HasPrefix(banner, "Resharding to 8 shards named stream/shard.r1-… (lineage mod), started by dora since ") &&
			strings.Contains(banner, "traffic doubled") && strings.HasSuffix(banner, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reshard banner %q, want one ending %q", banner, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
