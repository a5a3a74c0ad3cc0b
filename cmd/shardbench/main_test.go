package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/consultest"
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
		var r steadyResult
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
		{[]string{"frobnicate"}, `unknown scenario "frobnicate"`},
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
