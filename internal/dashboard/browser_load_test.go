package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/shard"
)

// loadPage is the load panel as a person sees it, read from the DOM.
type loadPage struct {
	Hidden bool              `json:"hidden"`
	InBand string            `json:"inBand"`
	Ratios map[string]string `json:"ratios"` // worker → its bar's ratio
	Out    map[string]string `json:"out"`    // worker → "true" when outside the band
	Heat   map[string]string `json:"heat"`   // shard → its cell's load ("" unknown)
	Band   string            `json:"band"`   // the first bar's band, left and width
	Sum    string            `json:"sum"`
	Tile   string            `json:"tile"` // the imbalance tile's label and value
}

const readLoad = `
const p = document.getElementById('load-panel');
const rows = [...document.querySelectorAll('#load-bars .load-row')];
const band = document.querySelector('#load-bars .load-band');
return {
  hidden: p.hidden,
  inBand: p.dataset.inBand || '',
  ratios: Object.fromEntries(rows.map(r => [r.dataset.worker, r.dataset.ratio])),
  out: Object.fromEntries(rows.map(r => [r.dataset.worker, r.dataset.out])),
  heat: Object.fromEntries([...document.querySelectorAll('#heat .heat')].map(c => [c.dataset.shard, c.dataset.load])),
  band: band ? band.style.left + ' ' + band.style.width : '',
  sum: document.getElementById('load-summary').textContent,
  tile: document.querySelector('#tile-imbalance .label').textContent + ': ' + document.querySelector('#tile-imbalance .value').textContent,
};`

// TestLoadInChromium: the load panel is hidden while no worker carries
// loads; once they do, each live worker has a bar at its load per unit of
// capacity over the mean, marked outside the tolerance band (drawn from
// Options.Tolerance), and each shard a heat cell with its load; when the
// loads even out the panel says the fleet is in the band. With
// $SHARDLEASE_LOAD_SCREENSHOT set it saves the skewed page there.
func TestLoadInChromium(t *testing.T) {
	wd := startBrowser(t)
	c, sessions := smallFleet(t) // a holds 000 and 001, b holds 002, 003 is free
	base := serve(t, dashboard.Options{Name: "loaded", Coordinator: c, Tolerance: 0.2})
	wd.navigate(base + "/")
	waitLoad(t, wd, "no loads", func(p loadPage) string {
		if !p.Hidden {
			return "the load panel is shown for a fleet that carries no loads"
		}
		if p.Tile != "imbalance (max − min): 1" {
			return fmt.Sprintf("imbalance tile %q, want the count imbalance, 1", p.Tile)
		}
		return ""
	})

	carry := func(loads map[string]map[shard.ID]float64) {
		t.Helper()
		for id, l := range loads {
			if err := c.Members().ReportLoad(context.Background(), sessions[id], id, l); err != nil {
				t.Fatal(err)
			}
		}
	}
	// 50 over a capacity of 2: 25 per unit; a 40 → 1.6×, b 10 → 0.4×.
	carry(map[string]map[shard.ID]float64{"a": {"stream/shard-000": 30, "stream/shard-001": 10}, "b": {"stream/shard-002": 10}})
	waitLoad(t, wd, "skewed", func(p loadPage) string {
		switch {
		case p.Hidden || p.InBand != "false":
			return fmt.Sprintf("panel hidden %v, in band %q; want shown and out of the band", p.Hidden, p.InBand)
		case p.Ratios["a"] != "1.600" || p.Ratios["b"] != "0.400":
			return fmt.Sprintf("bar ratios %v, want a 1.600 and b 0.400", p.Ratios)
		case p.Out["a"] != "true" || p.Out["b"] != "true":
			return fmt.Sprintf("bars outside the band %v, want both", p.Out)
		case p.Heat["stream/shard-000"] != "30" || p.Heat["stream/shard-002"] != "10" || p.Heat["stream/shard-003"] != "":
			return fmt.Sprintf("heat cells %v, want 000 at 30, 002 at 10, the free 003 unknown", p.Heat)
		case p.Tile != "load spread (÷ share): 0.40–1.60×":
			return fmt.Sprintf("imbalance tile %q, want the load spread 0.40–1.60×", p.Tile)
		case p.Band != "40% 20%":
			// The scale runs to twice the share: the band 0.8–1.2 sits at 40 %, 20 % wide.
			return fmt.Sprintf("band drawn at %q, want 40%% 20%% for a tolerance of 0.2", p.Band)
		}
		return ""
	})
	if path := os.Getenv("SHARDLEASE_LOAD_SCREENSHOT"); path != "" {
		png, err := wd.screenshot()
		if err == nil {
			err = os.WriteFile(path, png, 0o644)
		}
		if err != nil {
			t.Fatalf("saving the screenshot: %v", err)
		}
	}
	carry(map[string]map[shard.ID]float64{"a": {"stream/shard-000": 10, "stream/shard-001": 11}, "b": {"stream/shard-002": 20}})
	waitLoad(t, wd, "even", func(p loadPage) string {
		if p.InBand != "true" || p.Out["a"] != "" || p.Out["b"] != "" {
			return fmt.Sprintf("in band %q, bars out %v (ratios %v); want in the band, none out", p.InBand, p.Out, p.Ratios)
		}
		return ""
	})
}

func waitLoad(t *testing.T, wd *webDriver, what string, check func(loadPage) string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var p loadPage
		if err := wd.eval(readLoad, &p); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		why := check(p)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the page did not show the load within 10s: %s (summary %q)", what, why, p.Sum)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
