package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestStatusLoadColumns: with the workers' loads reported, status shows
// each worker's load and its ratio to its share, marked outside the
// band, each shard's load, and the fleet's spread against the band; a
// fleet without loads shows no load columns.
func TestStatusLoadColumns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 6, "w1", "w2", "w3")
		code, out, errOut := f.run(t.Context(), "", "status", "-prefix", "orders")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if strings.Contains(out, "LOAD") || strings.Contains(out, "load:") {
			t.Fatalf("a fleet carrying no loads shows load columns:\n%s", out)
		}

		// w1's shards carry 10 each, w2's 30, w3's 20: 120 over 3, mean 40.
		per := map[string]float64{"w1": 10, "w2": 30, "w3": 20}
		snap := f.snapshot()
		owners := f.owners()
		for _, m := range snap.Members {
			load := map[shard.ID]float64{}
			for id, w := range owners {
				if w == m.ID {
					load[id] = per[m.ID]
				}
			}
			if err := f.coord.Members().ReportLoad(context.Background(), m.Session, m.ID, load); err != nil {
				t.Fatalf("writing %s's loads: %v", m.ID, err)
			}
		}
		settle(time.Second)
		code, out, errOut = f.run(t.Context(), "", "status", "-prefix", "orders", "-imbalance-tolerance", "0.2")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		t.Logf("\n%s", out)
		for _, want := range []string{
			"load: mean 40 per unit of capacity · workers at 0.50–1.50 of their share · band ±20 % (OUT of the band) · 6 of 6 owned shards measured",
			"WORKER  STATE  OWNED  ASSIGNED  LOAD  LOAD/SHARE  VERSION",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("status output lacks %q", want)
			}
		}
		for _, row := range []string{`(?m)^w1\s+live\s+2\s+2\s+20\s+0\.50 low\s+v1\.4\.2`, `(?m)^w2\s+live\s+2\s+2\s+60\s+1\.50 high\s+v1\.4\.2`,
			`(?m)^w3\s+live\s+2\s+2\s+40\s+1\.00\s+v1\.4\.2`} {
			if !regexp.MustCompile(row).MatchString(out) {
				t.Errorf("no worker row matching %s", row)
			}
		}
		for id, w := range owners {
			row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(string(id)) + `\s+` + w + `\s+` + w + `\s+\d+\s+\S+ \(\S+ ago\)\s+` + num(per[w]) + `\s`)
			if !row.MatchString(out) {
				t.Errorf("no shard row for %s on %s with load %v", id, w, per[w])
			}
		}
	})
}
