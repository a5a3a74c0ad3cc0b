package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/benchtest"
)

// TestDocsUpdatesAPartialRun: a run of one scenario with --docs replaces
// that scenario's rows (all of them, baselines too) in the document's JSON
// and keeps every other scenario's rows from the run that measured them;
// the section names the later run with its commit and start; a --small run
// refuses to update a full-size document; a run of every scenario starts
// afresh.
func TestDocsUpdatesAPartialRun(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte("# B\n\n"+bench.DocsBegin+"\n"+bench.DocsEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	first := benchtest.SampleReport()
	if code := finish(first, outputs{docs: doc}, &stdout, &stderr); code != exitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr.String())
	}

	later := bench.Report{Machine: first.Machine, Trials: 5, Started: time.Date(2026, 12, 2, 0, 10, 0, 0, time.UTC), Commit: "abc1234",
		Scenarios: []bench.ScenarioRun{{Name: "lock-ops", Seconds: 20}},
		Results:   []bench.Result{bench.Measured("lock-ops", "consul", "lock ops/s, 128 locks per /v1/txn", "ops/s", []float64{30001, 30002, 30003})}}
	if code := finish(later, outputs{docs: doc}, &stdout, &stderr); code != exitOK {
		t.Fatalf("partial run: exit %d: %s", code, stderr.String())
	}
	p := bench.DocsFor(doc)
	got, err := bench.ReadReport(p.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if got.Commit != first.Commit || !got.Started.Equal(first.Started) {
		t.Errorf("the merged run says commit %q started %v, want the first run's %q %v", got.Commit, got.Started, first.Commit, first.Started)
	}
	var lockOps, crash int
	for _, r := range got.Results {
		switch r.Scenario {
		case "lock-ops":
			lockOps++
			if r.P50 != 30002 {
				t.Errorf("lock-ops row after the partial run: p50 %v, want the later run's 30002", r.P50)
			}
		case "crash-failover":
			crash++
		}
	}
	if lockOps != 1 || crash != 5 || len(got.Results) != 7 {
		t.Errorf("merged rows: %d lock-ops, %d crash-failover, %d in all; want 1, 5, 7", lockOps, crash, len(got.Results))
	}
	commits := map[string]string{}
	for _, s := range got.Scenarios {
		commits[s.Name] = s.Commit
	}
	if want := map[string]string{"crash-failover": first.Commit, "commit-throughput": first.Commit, "lock-ops": "abc1234"}; !maps.Equal(commits, want) {
		t.Errorf("merged scenarios' commits: %v, want %v", commits, want)
	}
	written, _ := os.ReadFile(doc)
	if !strings.Contains(string(written), "lock-ops (started 2026-12-02 00:10 UTC at commit `abc1234`)") || strings.Contains(string(written), "crash-failover (started") {
		t.Errorf("the section does not name the later run (and only it):\n%s", written)
	}

	small := later
	small.Small = true
	if code := finish(small, outputs{docs: doc}, &stdout, &stderr); code == exitOK || !strings.Contains(stderr.String(), "--small") {
		t.Errorf("a --small run updated a full-size document: exit %d, %s", code, stderr.String())
	}

	all := later
	all.Scenarios = nil
	for _, s := range scenarios {
		all.Scenarios = append(all.Scenarios, bench.ScenarioRun{Name: s.Name, Seconds: 1})
	}
	if code := finish(all, outputs{docs: doc}, &stdout, &stderr); code != exitOK {
		t.Fatalf("full run: exit %d: %s", code, stderr.String())
	}
	if got, _ := bench.ReadReport(p.JSON); got.Commit != "abc1234" || len(got.Results) != 1 {
		t.Errorf("a run of every scenario kept the older rows: commit %q, %d rows", got.Commit, len(got.Results))
	}
}
