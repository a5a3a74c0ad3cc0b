package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/benchtest"
)

// TestCheckFailsOnAMissedGoal: with --check a missed goal makes the exit
// code non-zero and is named with its figures; all goals met exit zero;
// a failed scenario is non-zero with or without --check.
func TestCheckFailsOnAMissedGoal(t *testing.T) {
	missed := benchtest.SampleReport()
	met := benchtest.SampleReport()
	met.Results = met.Results[:5]
	failed := met
	failed.Errors = []bench.ScenarioError{{Scenario: "lock-ops", Error: "agent gone"}}
	for _, tc := range []struct {
		name  string
		rep   bench.Report
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
	hand := "# Benchmarks\n\nhand-written\n\n" + bench.DocsBegin + "\nold figures\n" + bench.DocsEnd + "\n\n## History\n"
	if err := os.WriteFile(doc, []byte(hand), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := finish(benchtest.SampleReport(), outputs{docs: doc}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	written, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := string(written)
	if !strings.HasPrefix(got, "# Benchmarks\n\nhand-written\n\n"+bench.DocsBegin+"\n") || !strings.HasSuffix(got, bench.DocsEnd+"\n\n## History\n") ||
		strings.Contains(got, "old figures") || !strings.Contains(got, "| crash-failover |") || !strings.Contains(got, "](img/ownership.svg)") {
		t.Errorf("the document after --docs:\n%s", got)
	}
	var back bench.Report
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
	if err := bench.RenderDocs(bench.DocsFor(doc)); err == nil || !strings.Contains(err.Error(), bench.DocsBegin) {
		t.Errorf("a document without markers: %v, want an error naming the marker", err)
	}
}
