package bench_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/benchtest"
)

// TestDocsRunSection: docs/benchmarks.md's generated section is exactly
// what docs/bench/run.json renders to, and every number in it is a figure
// of that run (see runNumbers), so a hand edit or a figure from another
// run fails here. Regenerate with `go run ./cmd/shardbench docs`.
func TestDocsRunSection(t *testing.T) {
	p := bench.DocsFor(filepath.Join("..", "..", "docs", "benchmarks.md"))
	rep, err := bench.ReadReport(p.JSON)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(p.Doc)
	if err != nil {
		t.Fatal(err)
	}
	section, err := bench.ExtractSection(string(doc))
	if err != nil {
		t.Fatalf("docs/benchmarks.md: %v", err)
	}
	if want := p.Section(rep); section != want {
		t.Errorf("docs/benchmarks.md's shardbench section is not what %s renders to; run `go run ./cmd/shardbench docs`.\ngot:\n%s\nwant:\n%s", p.JSON, section, want)
	}
	if stray := benchtest.StrayNumbers(section, rep); len(stray) > 0 {
		t.Errorf("numbers in docs/benchmarks.md's run section that are no figure of %s: %v", p.JSON, stray)
	}
	if _, err := os.Stat(p.Plot); err != nil {
		t.Errorf("the section's plot: %v", err)
	}
}

// TestTableRatiosToBothBaselines: every shardlease row is followed by the
// baselines it is compared with, matched by scenario, metric and policy
// (the default baseline by scenario and metric alone), with its p50 / p99
// / max ratio to each.
func TestTableRatiosToBothBaselines(t *testing.T) {
	lines := benchtest.SampleReport().TableLines()
	type want struct{ system, policy, vsBaseline, vsTuned string }
	wants := []want{
		{bench.SystemShardlease, "shard.FastPolicy", "0.0489 / 0.051 / 0.051", "0.667 / 0.639 / 0.639"},
		{bench.SystemBaseline, "api.Lock defaults", "", ""},
		{bench.SystemTuned, "shard.FastPolicy", "", ""},
		{bench.SystemShardlease, "shard.DefaultPolicy", "0.264 / 0.275 / 0.275", "0.821 / 0.816 / 0.816"},
		{bench.SystemTuned, "shard.DefaultPolicy", "", ""},
		{"memory", "", "", ""},
		{"consul", "", "", ""},
	}
	if len(lines) != len(wants)+1 {
		t.Fatalf("%d table lines, want a header and %d:\n%v", len(lines), len(wants), lines)
	}
	for i, w := range wants {
		l := lines[i+1]
		if got := (want{l[2], l[3], l[8], l[9]}); got != w {
			t.Errorf("line %d: %+v, want %+v", i+1, got, w)
		}
	}
}

// TestOwnershipPlot renders the plot of a synthetic run: a well-formed SVG
// document that names every system in its legend.
func TestOwnershipPlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ownership.svg")
	if err := bench.WriteOwnershipPlot(benchtest.SampleReport(), path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root string
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
			text.WriteString("\n")
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	for _, want := range []string{bench.SystemShardlease, bench.SystemBaseline, bench.SystemTuned, "crash-failover", "shard.DefaultPolicy", "seconds (log scale)"} {
		if !strings.Contains(text.String(), want+"\n") && !strings.Contains(text.String(), want) {
			t.Errorf("the plot's text has no %q:\n%s", want, text.String())
		}
	}
	if err := bench.WriteOwnershipPlot(bench.Report{Results: benchtest.SampleReport().Results[5:]}, path); err == nil {
		t.Error("a run with no ownership comparison plotted without error")
	}
}
