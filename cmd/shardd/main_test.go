package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestDemoBinaryEndsWithAJSONSummary runs the main job as a user would:
// the built binary, 20 s, --json. The last line must be the summary with
// every invariant holding.
func TestDemoBinaryEndsWithAJSONSummary(t *testing.T) {
	bin := sharddBinary(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "demo", "--duration", "20s", "--json", "--seed", "11")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("shardd demo: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var raw map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &raw); err != nil {
		t.Fatalf("last line is not the JSON summary: %v\n%s", err, lines[len(lines)-1])
	}
	for _, k := range []string{"shards", "workers_final", "owned", "max_minus_min", "stale_commits_rejected",
		"stale_commits_accepted", "offset_regressions", "failovers", "moves", "committed"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("summary lacks %q: %s", k, lines[len(lines)-1])
		}
	}
	if raw["owned"] != raw["shards"] || raw["max_minus_min"].(float64) > 1 || raw["stale_commits_rejected"].(float64) < 1 ||
		raw["stale_commits_accepted"].(float64) != 0 || raw["offset_regressions"].(float64) != 0 || raw["failovers"].(float64) < 1 {
		t.Errorf("summary breaks an invariant: %s", lines[len(lines)-1])
	}
	if !strings.Contains(stderr.String(), "fault: crash") || !strings.Contains(stderr.String(), "fault: pause") {
		t.Errorf("progress does not show the faults:\n%s", stderr.String())
	}
}

func TestBadCommandLinesExitTwoNamingTheValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"demo", "--workers", "0"}, "--workers 0"},
		{[]string{"demo", "--shards", "0"}, "--shards 0"},
		{[]string{"demo", "--duration", "3s"}, "--duration 3s"},
		{[]string{"demo", "--ttl", "1s", "--renew", "1s"}, "exceeds ttl 1s"},
		{[]string{"demo", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
	} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bad line that runs the demo fails, not hangs
		code := run(ctx, tc.args, &out, &errb)
		cancel()
		if code != exitBadInvoke || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("shardd %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestVersionCommand: shardd version names the release, the protocol
// and the protocol steps this build speaks.
func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"version"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if want := fmt.Sprintf("shardd %s", shard.Release); !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), fmt.Sprintf("(protocol %d, steps %s, go", shard.Protocol, strings.Join(shard.Steps(), " "))) {
		t.Errorf("shardd version printed %q", out.String())
	}
}
