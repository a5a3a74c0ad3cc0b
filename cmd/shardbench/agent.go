package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
)

// benchAgent is the Consul agent a run uses: given, or started here.
type benchAgent struct {
	config  *api.Config
	version string // e.g. "1.14.8"
	mode    string // how it runs, for the report
	stop    func()
}

// maxConnsPerClient lifts Consul's per-client-IP HTTP connection limit
// (default 200) on the agent shardbench starts: every worker and every
// baseline lock runs on loopback, so they all count as one client, and
// the baseline alone keeps one blocking query open per lock attempt (12 ×
// 512 locks draw 429s at 8192). Consul refuses to start unless its file
// descriptor limit exceeds this by 20, so it is capped below the limit
// this process (and so the agent it starts) may raise itself to.
const maxConnsPerClient = 16384

// connsPerClient is maxConnsPerClient, or less where the hard limit on open
// files is lower.
func connsPerClient() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Max < maxConnsPerClient+100 {
		return max(200, int(lim.Max)-100)
	}
	return maxConnsPerClient
}

// obtainConsul connects to addr, or (addr empty) starts a dev agent from
// bin/consul, building it with scripts/consul.sh if it is missing.
func obtainConsul(ctx context.Context, addr string, log io.Writer) (*benchAgent, error) {
	if addr != "" {
		cfg := api.DefaultConfig()
		cfg.Address = addr
		a := &benchAgent{config: cfg, stop: cfg.Transport.CloseIdleConnections}
		return a, a.describe(ctx, "given agent "+addr)
	}
	if _, err := consultest.FindBinary(); err != nil {
		if os.Getenv(consultest.EnvBinary) != "" {
			return nil, err // a binary named explicitly is not built
		}
		fmt.Fprintf(log, "shardbench: %v\nshardbench: building it with scripts/consul.sh (several minutes on a cold cache) …\n", err)
		if err := buildConsul(ctx, log); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "shardbench-consul-")
	if err != nil {
		return nil, err
	}
	agent, err := consultest.Launch(dir, consultest.WithHCL(fmt.Sprintf("limits { http_max_conns_per_client = %d }", connsPerClient())))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	fmt.Fprintf(log, "shardbench: started a dev agent on %s (log %s)\n", agent.HTTPAddr, agent.LogPath)
	a := &benchAgent{config: agent.Config(), stop: func() { agent.Stop(); os.RemoveAll(dir) }}
	if err := a.describe(ctx, "dev agent started by shardbench (one server, in-memory Raft, loopback)"); err != nil {
		a.stop()
		return nil, err
	}
	return a, nil
}

// buildConsul runs scripts/consul.sh from the module root.
func buildConsul(ctx context.Context, log io.Writer) error {
	root, err := consultest.ModuleRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "consul.sh"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building consul with scripts/consul.sh: %w", err)
	}
	_, err = consultest.FindBinary()
	return err
}

// describe reads the agent's version and role, which also checks that it
// answers.
func (a *benchAgent) describe(ctx context.Context, how string) error {
	client, err := api.NewClient(a.config)
	if err != nil {
		return err
	}
	self, err := client.Agent().Self() // (no context: the client's own timeouts apply)
	if err != nil {
		return fmt.Errorf("consul agent %s: %w", a.config.Address, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := self["Config"]
	a.version, _ = cfg["Version"].(string)
	server, _ := cfg["Server"].(bool)
	a.mode = fmt.Sprintf("%s; server=%v", how, server)
	if raft, err := client.Operator().RaftGetConfiguration((&api.QueryOptions{}).WithContext(ctx)); err == nil {
		a.mode += fmt.Sprintf(", %d Raft server(s)", len(raft.Servers))
	}
	if dbg, ok := self["DebugConfig"]; ok {
		if n, ok := dbg["HTTPMaxConnsPerClient"].(float64); ok {
			a.mode += fmt.Sprintf(", http_max_conns_per_client=%.0f", n)
		}
	}
	return nil
}
