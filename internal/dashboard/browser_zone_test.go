package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/shard"
)

// TestZonesInChromium: workers in zones are listed grouped by zone, with
// the zone column shown; a fleet without zones hides the column.
func TestZonesInChromium(t *testing.T) {
	wd := startBrowser(t)
	c, sessions := smallFleet(t)
	base := serve(t, dashboard.Options{Name: "zoned", Coordinator: c})
	wd.navigate(base + "/")
	waitFor := func(what string, ok func(pageState) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var s pageState
			if err := wd.eval(readPage, &s); err != nil {
				t.Fatalf("reading the page: %v", err)
			}
			if ok(s) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page did not show %s within 10s: rows %q, zone column %q", what, s.Zones, s.ZoneColumn)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("two workers without a zone column", func(s pageState) bool { return s.Zones == ":a,:b" && s.ZoneColumn == "none" })

	for id, zone := range map[string]string{"a": "zone-b", "b": "zone-a"} {
		if err := c.Members().Join(context.Background(), sessions[id], shard.Member{ID: id, Version: "v9", Weight: 1, Zone: zone}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("the workers grouped by zone", func(s pageState) bool { return s.Zones == "zone-a:b,zone-b:a" && s.ZoneColumn != "none" })
}
