package bench

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

// Agent is the Consul agent a run uses: given, or started here.
type Agent struct {
	Config  *api.Config
	Version string // e.g. "1.14.8"
	Mode    string // how it runs, for the report
	// Stop stops an agent started here (and removes its directory), or
	// closes the given one's idle connections.
	Stop func()
}

// maxConnsPerClient lifts Consul's per-client-IP HTTP connection limit
// (default 200) on the agent shardbench starts: every worker and every
// baseline lock runs on loopback, so they all count as one client, and
// the baseline alone keeps one blocking query open per lock attempt (12 ×
// 512 locks draw 429s at 8192). Consul refuses to start unless its file
// descriptor limit exceeds this by 20, so it is capped below the limit
// this process (and so the agent it starts) may raise itself to.
const maxConnsPerClient = 16384

// ConnsPerClient is maxConnsPerClient, or less where the hard limit on
// open files is lower: the http_max_conns_per_client of the agent
// ObtainConsul starts.
func ConnsPerClient() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Max < maxConnsPerClient+100 {
		return max(200, int(lim.Max)-100)
	}
	return maxConnsPerClient
}

// ObtainConsul connects to addr, or (addr empty) starts a dev agent from
// bin/consul, building it with scripts/consul.sh if it is missing. The
// caller stops it with Agent.Stop.
func ObtainConsul(ctx context.Context, addr string, log io.Writer) (*Agent, error) {
	if addr != "" {
		cfg := api.DefaultConfig()
		cfg.Address = addr
		a := &Agent{Config: cfg, Stop: cfg.Transport.CloseIdleConnections}
		return a, a.describe(ctx, "given agent "+addr)
	}
	if _, err := consultest.FindBinary(); err != nil {
		if os.Getenv(consultest.EnvBinary) != "" {
			return nil, err // a binary named explicitly is not built
		}
		fmt.Fprintf(log, "shardbench: %v\nshardbench: building it with scripts/consul.sh (several minutes on a cold cache) …\n", err)
		if err := buildServer(ctx, log, "consul", consultest.FindBinary); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "shardbench-consul-")
	if err != nil {
		return nil, err
	}
	agent, err := consultest.Launch(dir, consultest.WithHCL(fmt.Sprintf("limits { http_max_conns_per_client = %d }", ConnsPerClient())))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	fmt.Fprintf(log, "shardbench: started a dev agent on %s (log %s)\n", agent.HTTPAddr, agent.LogPath)
	a := &Agent{Config: agent.Config(), Stop: func() { agent.Stop(); os.RemoveAll(dir) }}
	if err := a.describe(ctx, "dev agent started by shardbench (one server, in-memory Raft, loopback)"); err != nil {
		a.Stop()
		return nil, err
	}
	return a, nil
}

// buildServer runs scripts/NAME.sh from the module root (consul.sh,
// etcd.sh) and checks with find that it built the binary.
func buildServer(ctx context.Context, log io.Writer, name string, find func() (string, error)) error {
	root, err := consultest.ModuleRoot()
	if err != nil {
		return err
	}
	script := filepath.Join("scripts", name+".sh")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, script))
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s with %s: %w", name, script, err)
	}
	_, err = find()
	return err
}

// describe reads the agent's version and role, which also checks that it
// answers.
func (a *Agent) describe(ctx context.Context, how string) error {
	client, err := api.NewClient(a.Config)
	if err != nil {
		return err
	}
	self, err := client.Agent().Self() // (no context: the client's own timeouts apply)
	if err != nil {
		return fmt.Errorf("consul agent %s: %w", a.Config.Address, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := self["Config"]
	a.Version, _ = cfg["Version"].(string)
	server, _ := cfg["Server"].(bool)
	a.Mode = fmt.Sprintf("%s; server=%v", how, server)
	if raft, err := client.Operator().RaftGetConfiguration((&api.QueryOptions{}).WithContext(ctx)); err == nil {
		a.Mode += fmt.Sprintf(", %d Raft server(s)", len(raft.Servers))
	}
	if dbg, ok := self["DebugConfig"]; ok {
		if n, ok := dbg["HTTPMaxConnsPerClient"].(float64); ok {
			a.Mode += fmt.Sprintf(", http_max_conns_per_client=%.0f", n)
		}
	}
	return nil
}
