package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
)

// TestDemoOnConsul runs `shardd demo --consul` against a dev agent for 20 s:
// the same summary and invariants as on the embedded coordinator, with a
// crash whose session Consul invalidates and a pause whose late commits the
// fence rejects; the fleet's members and shard locks stay under the prefix.
// An unreachable Consul is a clear error (exit 1) after a bounded retry.
func TestDemoOnConsul(t *testing.T) {
	bin := sharddBinary(t)

	t.Run("Unreachable", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "demo", "--consul", addr, "--duration", "25s", "--json")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err = cmd.Run()
		if err == nil || cmd.ProcessState.ExitCode() != exitFailed {
			t.Fatalf("demo with Consul down: %v, want exit status 1\n%s", err, stderr.String())
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("gave up after %v, want about 10 s of retries", took)
		}
		if !strings.Contains(stderr.String(), addr) || !strings.Contains(stderr.String(), "connection refused") {
			t.Errorf("the error does not say which address refused: %s", stderr.String())
		}
		if strings.Contains(stderr.String(), "fault:") {
			t.Errorf("the demo started its fleet without Consul:\n%s", stderr.String())
		}
	})

	t.Run("Run", func(t *testing.T) {
		t.Parallel()
		agent := consultest.StartDev(t)
		prefix := "shardd-test/demo"
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "demo", "--consul", agent.HTTPAddr, "--prefix", prefix, "--duration", "25s", "--json", "--seed", "11")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("shardd demo --consul: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		last := lines[len(lines)-1]
		var raw map[string]any
		if err := json.Unmarshal([]byte(last), &raw); err != nil {
			t.Fatalf("last line is not the JSON summary: %v\n%s", err, last)
		}
		num := func(k string) float64 { v, _ := raw[k].(float64); return v }
		if num("owned") != num("shards") || num("max_minus_min") > 1 || num("stale_commits_rejected") < 1 ||
			num("stale_commits_accepted") != 0 || num("offset_regressions") != 0 || num("lost_commits") != 0 ||
			num("false_rejections") != 0 || num("failovers") < 1 {
			t.Errorf("summary breaks an invariant: %s", last)
		}
		if !strings.Contains(stderr.String(), "coordinator: Consul at "+agent.HTTPAddr) ||
			!strings.Contains(stderr.String(), "fault: crash") || !strings.Contains(stderr.String(), "fault: pause") {
			t.Errorf("progress does not show Consul and the faults:\n%s", stderr.String())
		}
		kv := agent.CLI(t, "kv", "get", "-recurse", prefix)
		if n := strings.Count(kv, prefix+"/shards/"); n != 128 {
			t.Errorf("%d shard keys under %s, want 128", n, prefix)
		}
		if n := strings.Count(kv, prefix+"/members/"); n < 12 {
			t.Errorf("%d member keys under %s, want at least 12", n, prefix)
		}
		t.Logf("summary: %s", last)
	})
}
