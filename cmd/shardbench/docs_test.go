package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDocsRunSection: docs/benchmarks.md's generated section is exactly
// what docs/bench/run.json renders to, and every number in it is a figure
// of that run (see runNumbers), so a hand edit or a figure from another
// run fails here. Regenerate with `go run ./cmd/shardbench docs`.
func TestDocsRunSection(t *testing.T) {
	p := docsFor(filepath.Join("..", "..", "docs", "benchmarks.md"))
	rep, err := readReport(p.json)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(p.doc)
	if err != nil {
		t.Fatal(err)
	}
	section, err := extractSection(string(doc))
	if err != nil {
		t.Fatalf("docs/benchmarks.md: %v", err)
	}
	if want := rep.docSection(relTo(p.doc, p.json), relTo(p.doc, p.plot)); section != want {
		t.Errorf("docs/benchmarks.md's shardbench section is not what %s renders to; run `go run ./cmd/shardbench docs`.\ngot:\n%s\nwant:\n%s", p.json, section, want)
	}
	if stray := strayNumbers(section, rep); len(stray) > 0 {
		t.Errorf("numbers in docs/benchmarks.md's run section that are no figure of %s: %v", p.json, stray)
	}
	if _, err := os.Stat(p.plot); err != nil {
		t.Errorf("the section's plot: %v", err)
	}
}

// TestStrayNumbersAreCaught: the number check accepts a section rendered
// from its run, and names a number from elsewhere (an older run's 12,500)
// and a figure rounded differently from the run's (2.21 for 2.202).
func TestStrayNumbersAreCaught(t *testing.T) {
	rep := sampleReport()
	section := rep.docSection("bench/run.json", "img/ownership.svg")
	if stray := strayNumbers(section, rep); len(stray) > 0 {
		t.Fatalf("a rendered section has numbers the check does not find in its run: %v\n%s", stray, section)
	}
	for _, tc := range []struct{ add, want string }{
		{"The 64+64 transaction did 12,500 ops/s.", "12,500"},
		{"Failover took 2.21 s.", "2.21"},
	} {
		if stray := strayNumbers(section+tc.add, rep); !equalStrings(stray, []string{tc.want}) {
			t.Errorf("section + %q: stray numbers %v, want [%s]", tc.add, stray, tc.want)
		}
	}
	if stray := strayNumbers(section+"Failover took 2.20 s, 2,202 ms.", rep); len(stray) > 0 {
		t.Errorf("a figure of the run as rounded in print was refused: %v", stray)
	}
}

// numberRE is a number as the section prints it: digits, optionally with
// thousands commas and a decimal part, not glued to a word (p50, v669 and
// 25d6eec hold none).
var numberRE = regexp.MustCompile(`\b\d[\d,]*(?:\.\d+)?\b`)

// strayNumbers returns the numbers of section that are no figure of rep.
//
// A number x printed with d decimals (commas dropped, sign ignored) is a
// figure of the run when some value v of the run, times 1, 1000, 1/1000
// (unit prefixes), 100 (a ratio as a percentage) or 1/60 (seconds as
// minutes), is x when rounded to d decimals; or when x is written in one of
// the run's texts (a metric's sizes such as 12 workers × 128 shards, a
// goal, a note, the machine, the commit). The values of the run are every
// row's p50, p99, max, trials and extra figures; the ratios, both ways, of
// p50, p99 and max between a shardlease row and the baselines it is
// compared with; the run's trials, cores, memory in GiB, its start's date
// and time, each scenario's seconds and their sum; and the counts of rows
// with a goal and of those that met it.
func strayNumbers(section string, rep report) []string {
	texts := map[string]bool{}
	for _, s := range runTexts(rep) {
		for _, tok := range numberRE.FindAllString(s, -1) {
			texts[tok] = true
		}
	}
	values := runValues(rep)
	var stray []string
	for _, tok := range numberRE.FindAllString(section, -1) {
		if texts[tok] || isFigure(tok, values) {
			continue
		}
		stray = append(stray, tok)
	}
	return stray
}

func isFigure(tok string, values []float64) bool {
	plain := strings.ReplaceAll(tok, ",", "")
	for len(plain) > 1 && plain[0] == '0' && plain[1] != '.' {
		plain = plain[1:] // a date's 01
	}
	decimals := 0
	if _, frac, ok := strings.Cut(plain, "."); ok {
		decimals = len(frac)
	}
	for _, v := range values {
		for _, scale := range []float64{1, 1000, 1.0 / 1000, 100, 1.0 / 60} {
			if strconv.FormatFloat(math.Abs(v*scale), 'f', decimals, 64) == plain {
				return true
			}
		}
	}
	return false
}

// runTexts are the run's strings, whose numbers are its sizes and settings.
func runTexts(rep report) []string {
	m := rep.Machine
	texts := []string{rep.Commit, m.CPU, m.Kernel, m.OS, m.GoVersion, m.ConsulVersion, m.ConsulMode}
	for _, r := range rep.Results {
		texts = append(texts, r.Scenario, r.System, r.Metric, r.Unit, r.Policy, r.Goal, r.Note)
		texts = append(texts, sortedKeys(r.Extra)...)
	}
	for _, e := range rep.Errors {
		texts = append(texts, e.Scenario, e.Error)
	}
	return texts
}

// runValues are the run's figures, as strayNumbers defines them.
func runValues(rep report) []float64 {
	started := rep.Started.UTC()
	gib, _ := strconv.ParseFloat(rep.Machine.memoryGiB(), 64)
	vs := []float64{float64(rep.Trials), float64(rep.Machine.Cores), gib,
		float64(started.Year()), float64(started.Month()), float64(started.Day()), float64(started.Hour()), float64(started.Minute())}
	var total float64
	for _, s := range rep.Scenarios {
		vs, total = append(vs, s.Seconds), total+s.Seconds
	}
	vs = append(vs, total, float64(len(rep.missed())))
	goals := 0
	for _, r := range rep.Results {
		vs = append(vs, r.P50, r.P99, r.Max, float64(r.Trials))
		for _, v := range r.Extra {
			vs = append(vs, v)
		}
		if r.Met != nil {
			goals++
		}
		if r.System != systemShardlease {
			continue
		}
		c := compare(rep.Results, r)
		for _, b := range []*result{c.baseline, c.tuned} {
			if b != nil {
				vs = append(vs, r.P50/b.P50, r.P99/b.P99, r.Max/b.Max, b.P50/r.P50, b.P99/r.P99, b.Max/r.Max)
			}
		}
	}
	return append(vs, float64(goals), float64(goals-len(rep.missed())))
}

// sampleReport is a small synthetic run: an ownership comparison of all
// three systems, a shardlease row on another policy with its tuned
// baseline only, a missed goal and a row of neither.
func sampleReport() report {
	sl := measured("crash-failover", systemShardlease, "time until its shards have new handlers running", "s", []float64{2.202, 2.1, 2.3})
	sl.Policy = "shard.FastPolicy"
	sl = sl.withGoal("p99 <= 3s", true).with("first_freed_s_p50", 1.364).with("first_freed_s_p99", 1.383).with("kv_visible_s_p50", 2.454).with("kv_visible_s_p99", 2.481)
	bl := measured("crash-failover", systemBaseline, sl.Metric, "s", []float64{44.97, 45.03, 45.1})
	bl.Policy = "api.Lock defaults"
	tu := measured("crash-failover", systemTuned, sl.Metric, "s", []float64{3.1, 3.3, 3.6})
	tu.Policy = "shard.FastPolicy"
	sd := measured("crash-failover", systemShardlease, sl.Metric, "s", []float64{11.2, 11.9, 12.4})
	sd.Policy = "shard.DefaultPolicy"
	td := measured("crash-failover", systemTuned, sl.Metric, "s", []float64{14.1, 14.5, 15.2})
	td.Policy = "shard.DefaultPolicy"
	mem := measured("commit-throughput", "memory", "fenced ÷ unfenced commits/s, one at a time", "ratio", []float64{0.6158, 0.638, 0.62}).withGoal("p50 >= 0.9", false)
	ops := measured("lock-ops", "consul", "lock ops/s, 128 locks per /v1/txn", "ops/s", []float64{24382, 28188, 25000})
	return report{
		Machine: machine{Cores: 2, CPU: "AMD EPYC", MemoryBytes: 23 << 30, OS: "linux/amd64", Kernel: "6.18.44", GoVersion: "go1.26.8", ConsulVersion: "1.14.8", ConsulMode: "dev agent"},
		Trials:  3, Started: time.Date(2026, 12, 1, 17, 58, 33, 0, time.UTC), Commit: "25d6eec",
		Scenarios: []scenarioRun{{Name: "crash-failover", Seconds: 255.2}, {Name: "commit-throughput", Seconds: 61.7}, {Name: "lock-ops", Seconds: 18.3}},
		Results:   []result{bl, sl, tu, sd, td, mem, ops},
	}
}

// TestTableRatiosToBothBaselines: every shardlease row is followed by the
// baselines it is compared with, matched by scenario, metric and policy
// (the default baseline by scenario and metric alone), with its p50 / p99
// / max ratio to each.
func TestTableRatiosToBothBaselines(t *testing.T) {
	lines := sampleReport().tableLines()
	type want struct{ system, policy, vsBaseline, vsTuned string }
	wants := []want{
		{systemShardlease, "shard.FastPolicy", "0.0489 / 0.051 / 0.051", "0.667 / 0.639 / 0.639"},
		{systemBaseline, "api.Lock defaults", "", ""},
		{systemTuned, "shard.FastPolicy", "", ""},
		{systemShardlease, "shard.DefaultPolicy", "0.264 / 0.275 / 0.275", "0.821 / 0.816 / 0.816"},
		{systemTuned, "shard.DefaultPolicy", "", ""},
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

// TestCheckFailsOnAMissedGoal: with --check a missed goal makes the exit
// code non-zero and is named with its figures; all goals met exit zero;
// a failed scenario is non-zero with or without --check.
func TestCheckFailsOnAMissedGoal(t *testing.T) {
	missed := sampleReport()
	met := sampleReport()
	met.Results = met.Results[:5]
	failed := met
	failed.Errors = []scenarioError{{Scenario: "lock-ops", Error: "agent gone"}}
	for _, tc := range []struct {
		name  string
		rep   report
		check bool
		code  int
		say   string
	}{
		{"missed, --check", missed, true, exitFailed, "goal missed: commit-throughput / memory / fenced ÷ unfenced commits/s, one at a time: goal p50 >= 0.9, p50 0.62, p99 0.638, max 0.638"},
		{"missed, no --check", missed, false, exitOK, ""},
		{"all met, --check", met, true, exitOK, ""},
		{"a scenario failed, --check", failed, true, exitFailed, "scenario failed: lock-ops: agent gone"},
		{"a scenario failed", failed, false, exitFailed, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := finish(tc.rep, outputs{json: true, check: tc.check}, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.say) || tc.say == "" && stderr.Len() > 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q", tc.name, code, stderr.String(), tc.code, tc.say)
		}
	}
}

// TestDocsWritesOneRun: --docs writes the run's JSON beside the document,
// the plot, and the section between the markers, leaving the hand-written
// text around it alone; `shardbench docs` then renders the same document
// from that JSON, and a document without markers is an error.
func TestDocsWritesOneRun(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "benchmarks.md")
	hand := "# Benchmarks\n\nhand-written\n\n" + docsBegin + "\nold figures\n" + docsEnd + "\n\n## History\n"
	if err := os.WriteFile(doc, []byte(hand), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := finish(sampleReport(), outputs{docs: doc}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	written, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := string(written)
	if !strings.HasPrefix(got, "# Benchmarks\n\nhand-written\n\n"+docsBegin+"\n") || !strings.HasSuffix(got, docsEnd+"\n\n## History\n") ||
		strings.Contains(got, "old figures") || !strings.Contains(got, "| crash-failover |") || !strings.Contains(got, "](img/ownership.svg)") {
		t.Errorf("the document after --docs:\n%s", got)
	}
	var back report
	if data, err := os.ReadFile(filepath.Join(dir, "bench", "run.json")); err != nil || json.Unmarshal(data, &back) != nil || len(back.Results) != 7 {
		t.Errorf("bench/run.json: %v, %d rows", err, len(back.Results))
	}
	if code := run(t.Context(), []string{"docs", "--doc", doc}, &stdout, &stderr); code != exitOK {
		t.Fatalf("shardbench docs: exit %d: %s", code, stderr.String())
	}
	if again, _ := os.ReadFile(doc); string(again) != got {
		t.Errorf("shardbench docs rendered a different document from the JSON --docs wrote:\n%s", again)
	}
	if err := os.WriteFile(doc, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := renderDocs(docsFor(doc)); err == nil || !strings.Contains(err.Error(), docsBegin) {
		t.Errorf("a document without markers: %v, want an error naming the marker", err)
	}
}

// TestOwnershipPlot renders the plot of a synthetic run: a well-formed SVG
// document that names every system in its legend.
func TestOwnershipPlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ownership.svg")
	if err := writeOwnershipPlot(sampleReport(), path); err != nil {
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
	for _, want := range []string{systemShardlease, systemBaseline, systemTuned, "crash-failover", "shard.DefaultPolicy", "seconds (log scale)"} {
		if !strings.Contains(text.String(), want+"\n") && !strings.Contains(text.String(), want) {
			t.Errorf("the plot's text has no %q:\n%s", want, text.String())
		}
	}
	if err := writeOwnershipPlot(report{Results: sampleReport().Results[5:]}, path); err == nil {
		t.Error("a run with no ownership comparison plotted without error")
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}
