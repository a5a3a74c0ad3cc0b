package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/pgtest"
)

// TestDemoCommitsThroughEveryOffsetsBackend runs the demo's 20 s schedule
// with offsets in a real PostgreSQL and in a real Consul's KV: the same
// summary and the same invariants as with the default bbolt file.
func TestDemoCommitsThroughEveryOffsetsBackend(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
		says string
	}{
		{"postgres", func(t *testing.T) []string {
			return []string{"--offsets", pgtest.Start(t).DSN("postgres")}
		}, "offsets: PostgreSQL table shardlease_demo_"},
		{"consul", func(t *testing.T) []string {
			// The production shape: a Consul fleet with its offsets under
			// its own prefix, P/offsets/.
			return []string{"--offsets", "consul", "--consul", consultest.StartDev(t).HTTPAddr}
		}, "offsets: Consul KV under shardlease/demo/offsets/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// 25 s: the shortest run that fits the Consul demo's schedule
			// (its lock-delay is the step-down deadline of ConsulPolicy).
			args := append([]string{"demo", "--duration", "25s", "--json", "--seed", "5"}, tc.args(t)...)
			// The built binary, not run() under the race detector: the
			// demo's 2 s lease policy on a real server is the product's.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, sharddBinary(t), args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("shardd %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("the demo did not say where offsets live (%q):\n%s", tc.says, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			var sum map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
				t.Fatalf("last line is not the JSON summary: %v", err)
			}
			if sum["owned"] != sum["shards"] || sum["stale_commits_rejected"].(float64) < 1 ||
				sum["stale_commits_accepted"].(float64) != 0 || sum["offset_regressions"].(float64) != 0 || sum["committed"].(float64) < 100 {
				t.Errorf("summary breaks an invariant: %s", lines[len(lines)-1])
			}
		})
	}
}

func TestDemoRefusesAnUnknownOffsetsBackend(t *testing.T) {
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if code := run(ctx, []string{"demo", "--offsets", "mysql://db"}, &stdout, &stderr); code != exitBadInvoke ||
		!strings.Contains(stderr.String(), `--offsets "mysql://db": want bolt, consul or a postgres:// URL`) {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
