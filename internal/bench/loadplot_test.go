package bench_test

import (
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/benchtest"
)

// TestLoadPlot: --docs draws img/load.svg beside the ownership plot from a
// run with skewed-load's traces, as SVG naming both fleets, and the
// section links it with no number that is not the run's; a run of
// skewed-load alone draws no ownership plot, a run without it no load plot.
func TestLoadPlot(t *testing.T) {
	rep := benchtest.SampleReport()
	for _, sys := range []string{bench.SystemShardlease, bench.SystemCountBased} {
		tr := &bench.LoadTrace{Tolerance: 0.1, NoiseS: 3, TripledS: 6}
		for i := range 10 {
			tr.Add(float64(i), 1+float64(i%3)/10, 0.9, 1.5, 0.7)
		}
		r := bench.Measured("skewed-load", sys, "max worker load ÷ mean", "ratio", []float64{1.05, 1.2})
		r.Trace = tr
		rep.Results = append(rep.Results, r)
	}
	dir := t.TempDir()
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte(bench.DocsBegin+"\n"+bench.DocsEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := bench.DocsFor(doc)
	if err := bench.WriteDocs(rep, p, nil); err != nil {
		t.Fatal(err)
	}
	texts, err := svgTexts(p.LoadPlot)
	if err != nil {
		t.Fatalf("%s: %v", p.LoadPlot, err)
	}
	for _, want := range []string{"load-aware", "count-based"} {
		if !strings.Contains(texts, want) {
			t.Errorf("%s names no %q; its texts: %s", p.LoadPlot, want, texts)
		}
	}
	for _, plot := range []string{p.LoadPlot, p.Plot} {
		for _, over := range overflowing(t, plot) {
			t.Errorf("%s: %s", plot, over)
		}
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	section, err := bench.ExtractSection(string(b))
	if err != nil || !strings.Contains(section, "](img/load.svg)") {
		t.Errorf("the section does not show img/load.svg (%v):\n%s", err, section)
	}
	if stray := benchtest.StrayNumbers(section, rep); len(stray) > 0 {
		t.Errorf("numbers in the section that are no figure of the run: %v", stray)
	}

	// A run of skewed-load alone has no ownership plot to draw or show.
	alone := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(alone, []byte(bench.DocsBegin+"\n"+bench.DocsEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bench.WriteDocs(bench.Report{Results: rep.Results[len(rep.Results)-2:]}, bench.DocsFor(alone), nil); err != nil {
		t.Fatalf("a run of skewed-load alone: %v", err)
	}
	if b, err := os.ReadFile(alone); err != nil || strings.Contains(string(b), "ownership.svg") || !strings.Contains(string(b), "load.svg") {
		t.Errorf("a run of skewed-load alone (%v): want the load plot and no ownership plot in\n%s", err, b)
	}

	other := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(other, []byte(bench.DocsBegin+"\n"+bench.DocsEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bench.WriteDocs(benchtest.SampleReport(), bench.DocsFor(other), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bench.DocsFor(other).LoadPlot); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run without skewed-load drew a load plot: %v", err)
	}
}

// svgTexts parses path as XML with an <svg> root and returns its text.
func svgTexts(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var texts []string
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "svg" {
		return "", errors.New("the root element is " + root + ", not svg")
	}
	return strings.Join(texts, " | "), nil
}

// overflowing lists the texts of the SVG at path that would run past its
// right edge in a browser without the plot's font: each drawn from its x
// at 0.6 em a character, the width of a wide sans-serif fallback (the
// plots name Liberation Serif, which a browser may not have).
func overflowing(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vb := regexp.MustCompile(`viewBox="0 0 ([0-9.]+) [0-9.]+"`).FindSubmatch(b)
	if vb == nil {
		t.Fatalf("%s has no viewBox", path)
	}
	width, _ := strconv.ParseFloat(string(vb[1]), 64)
	var out []string
	for _, m := range regexp.MustCompile(`<text x="([-0-9.]+)"[^>]*font-size:([0-9.]+)px[^>]*>([^<]*)</text>`).FindAllSubmatch(b, -1) {
		x, _ := strconv.ParseFloat(string(m[1]), 64)
		size, _ := strconv.ParseFloat(string(m[2]), 64)
		text := html.UnescapeString(string(m[3]))
		if end := x + 0.6*size*float64(utf8.RuneCountInString(text)); x < 0 || end > width {
			out = append(out, fmt.Sprintf("%q from x %.0f to about %.0f, past the width %.0f", text, x, end, width))
		}
	}
	return out
}
