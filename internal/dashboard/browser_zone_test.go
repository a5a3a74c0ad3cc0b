package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/shard"
)

// TestZonesInChromium: workers in zones are listed grouped by zone, with
// the zone column shown; a fleet without zones hides the column. A
// placement rule that lets no live worker own some shards shows a banner
// counting them, gone once the rule is removed.
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
				t.Fatalf("the page did not show %s within 10s: rows %q, zone column %q, unplaceable %q", what, s.Zones, s.ZoneColumn, s.Unplaceable)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("two workers without a zone column", func(s pageState) bool { return s.Zones == ":a,:b" && s.ZoneColumn == "none" })

	for id, zone := range map[string]string{"a": "zone-b", "b": "zone-a"} {
		if err := c.Members().Join(context.Background(), sessions[id], shard.Member{ID: id, Version: "v9", Weight: 1, Zone: zone, Steps: shard.Steps()}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("the workers grouped by zone", func(s pageState) bool { return s.Zones == "zone-a:b,zone-b:a" && s.ZoneColumn != "none" })

	waitFor("no unplaceable banner", func(s pageState) bool { return s.Unplaceable == "" })
	pin := shard.BalancePolicy{Rules: []shard.PlacementRule{{Shards: "stream/shard-00*", Kind: shard.RulePin, Labels: map[string]string{"disk": "nvme"}}}}
	if _, err := c.Fleet().SetPolicy(context.Background(), pin, false); err != nil {
		t.Fatal(err)
	}
	waitFor("the four shards pinned to a label nobody has counted unplaceable", func(s pageState) bool { return s.Unplaceable == "4" })
	if _, err := c.Fleet().SetPolicy(context.Background(), shard.BalancePolicy{}, false); err != nil {
		t.Fatal(err)
	}
	waitFor("the banner gone with the rule", func(s pageState) bool { return s.Unplaceable == "" })
}
