package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/steady"
	"github.com/shardlease/shardlease/internal/harness/benchtest"
	"github.com/shardlease/shardlease/internal/harness/consultest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConsulSteadyReportsItsFigures runs consul-steady small (3 workers,
// 16 and 64 shards, 2 s windows) on a dev agent: one JSON object per fleet,
// each converged, with the steady-state requests counted per endpoint. It
// checks the figures are there, not how fast anything was.
func TestConsulSteadyReportsItsFigures(t *testing.T) {
	agent := consultest.StartDev(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"consul-steady", "--consul", agent.HTTPAddr, "--workers", "3", "--shards", "16,64",
		"--window", "2s", "--ttl", "3s", "--renew", "500ms", "--pause-budget", "1s", "--json"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d result lines, want 2:\n%s", len(lines), stdout.String())
	}
	for i, want := range []int{16, 64} {
		var r steady.Result
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, lines[i])
		}
		if r.Shards != want || r.Workers != 3 || r.ColdStartSeconds <= 0 || r.AcquireCalls < 3 || r.ShardsAsked < int64(want) ||
			r.RequestsPerWorker <= 0 || r.ByEndpoint["PUT /v1/agent/check/update"] <= 0 {
			t.Errorf("incomplete figures: %s", lines[i])
		}
		t.Logf("%s", lines[i])
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"--scenario", "crash-failover,nope"}, `unknown scenario "nope"`},
		{[]string{"--trials", "0", "--scenario", "all"}, "--trials 0"},
		{[]string{"--json"}, "--scenario is required"},
		{[]string{"consul-steady", "--shards", "128,x"}, `--shards "128,x"`},
		{[]string{"consul-steady", "--workers", "0", "--window", "0s"}, "--workers 0"},
		{[]string{"consul-steady", "--window", "0s"}, "--window 0s"},
		{[]string{"consul-steady", "--prefix", "/x"}, `prefix "/x"`},
	} {
		var out, errb bytes.Buffer
		if code := run(t.Context(), tc.args, &out, &errb); code != exitBadInvoke || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("shardbench %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestAllScenariosSmoke runs every scenario once at --small sizes on a dev
// agent, as CI does: one JSON document, no scenario failed, every scenario
// has rows, every shardlease row has its baseline row, and --docs wrote the
// run's documents. It asserts nothing about time.
func TestAllScenariosSmoke(t *testing.T) {
	agent := consultest.StartDev(t, consultest.WithHCL(fmt.Sprintf("limits { http_max_conns_per_client = %d }", bench.ConnsPerClient())))
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	md, doc := filepath.Join(dir, "table.md"), filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte(bench.DocsBegin+"\n"+bench.DocsEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := run(t.Context(), []string{"--scenario", "all", "--small", "--trials", "1", "--json", "--markdown", md, "--docs", doc, "--consul", agent.HTTPAddr}, &stdout, &stderr)
	t.Logf("progress:\n%s", stderr.String())
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("the output is not one JSON report: %v\n%s", err, stdout.String())
	}
	for _, e := range rep.Errors {
		t.Errorf("scenario %s failed: %s", e.Scenario, e.Error)
	}
	if rep.Machine.ConsulVersion == "" || rep.Machine.Cores < 1 || rep.Machine.GoVersion == "" {
		t.Errorf("machine description incomplete: %+v", rep.Machine)
	}
	rows := map[string]map[string]bool{} // scenario → "system/metric"
	for _, r := range rep.Results {
		if rows[r.Scenario] == nil {
			rows[r.Scenario] = map[string]bool{}
		}
		rows[r.Scenario][r.System+"/"+r.Metric] = true
		if r.Trials != 1 {
			t.Errorf("%s/%s/%s: %d trials, want 1", r.Scenario, r.System, r.Metric, r.Trials)
		}
	}
	table, err := os.ReadFile(md)
	if err != nil {
		t.Fatalf("--markdown: %v", err)
	}
	for _, s := range scenarios {
		if len(rows[s.Name]) == 0 {
			t.Errorf("scenario %s reported no rows", s.Name)
		}
		if !strings.Contains(string(table), "| "+s.Name+" |") {
			t.Errorf("the Markdown table has no row of %s:\n%s", s.Name, table)
		}
	}
	checkAssignorRows(t, rep)
	checkEngineRows(t, rep)
	// --docs wrote the run's JSON, its plot and the section rendered from
	// that JSON, whose numbers are all the run's.
	p := bench.DocsFor(doc)
	written, err := bench.ReadReport(p.JSON)
	if err != nil || len(written.Results) != len(rep.Results) || len(written.Scenarios) != len(scenarios) {
		t.Errorf("--docs JSON: %v, %d rows (stdout %d), %d scenarios timed", err, len(written.Results), len(rep.Results), len(written.Scenarios))
	}
	if fi, err := os.Stat(p.Plot); err != nil || fi.Size() < 1000 {
		t.Errorf("--docs plot: %v", err)
	}
	if b, err := os.ReadFile(doc); err != nil {
		t.Error(err)
	} else if section, err := bench.ExtractSection(string(b)); err != nil || strings.Count(section, "| crash-failover |") < 2 {
		t.Errorf("--docs section (%v):\n%s", err, b)
	} else if stray := benchtest.StrayNumbers(section, written); len(stray) > 0 {
		t.Errorf("--docs section: numbers that are no figure of the run: %v", stray)
	}
	for _, name := range []string{"crash-failover", "graceful-handoff", "scale-out"} {
		if !rows[name][bench.SystemShardlease+"/time until its shards have new handlers running"] && !rows[name][bench.SystemShardlease+"/time until max−min <= 1"] {
			t.Errorf("scenario %s has no shardlease time row: %v", name, rows[name])
		}
	}
	// Every row of the table has figures for both systems: a
	// scenario with shardlease rows has baseline rows too, and in the
	// ownership scenarios each shardlease metric has its baseline twin.
	// (A scenario may measure the baseline at fewer sizes than shardlease,
	// where one api.Lock per shard does not scale.)
	for _, r := range rep.Results {
		if r.System != bench.SystemShardlease {
			continue
		}
		hasBaseline := false
		for key := range rows[r.Scenario] {
			hasBaseline = hasBaseline || strings.HasPrefix(key, bench.SystemBaseline+"/")
		}
		if !hasBaseline && !noBaseline[r.Scenario] {
			t.Errorf("%s: shardlease rows but no baseline row", r.Scenario)
		}
		switch r.Scenario {
		case "crash-failover", "graceful-handoff", "scale-out":
			// A row of the large fleet (100 × 10,000) names its size and
			// has no twin: the baseline would need a million api.Locks.
			// Nor has the baseline an assignor whose worker could crash.
			if !strings.Contains(r.Metric, " workers × ") && !strings.Contains(r.Metric, "the assignor's worker") &&
				!rows[r.Scenario][bench.SystemBaseline+"/"+r.Metric] {
				t.Errorf("%s: shardlease row %q has no baseline row", r.Scenario, r.Metric)
			}
		}
		// The take-away rows name the policy they ran with, and it meets
		// the lock-delay rule.
		if r.Scenario == "crash-failover" || r.Scenario == "graceful-handoff" {
			x := r.Extra
			if x["check_ttl_s"] <= 0 || x["renew_s"] <= 0 || x["pause_budget_s"] <= 0 || x["lock_delay_s"] < x["check_ttl_s"]-x["pause_budget_s"] ||
				!strings.Contains(r.Note, "policy shard.") {
				t.Errorf("%s: the policy reported is missing or breaks the lock-delay rule: %v (%s)", r.Scenario, x, r.Note)
			}
		}
	}
}

// TestScenarioTable: every scenario has a distinct name other than "all",
// a summary and a function, so that --scenario can name each one.
func TestScenarioTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range scenarios {
		if s.Name == "" || s.Name == "all" || seen[s.Name] || s.Summary == "" || s.Run == nil {
			t.Errorf("scenario %q: empty, reserved or repeated name, or no summary or function", s.Name)
		}
		seen[s.Name] = true
	}
	if _, err := scenarios.Select("cold-start,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("an unknown scenario: %v, want an error naming it", err)
	}
}
