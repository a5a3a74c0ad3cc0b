package consultest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/shardproc"
	"github.com/shardlease/shardlease/internal/harness/tb"
)

// Agent is one running (or stopped) Consul agent process.
type Agent struct {
	// Name is the agent's node name, unique per agent.
	Name string
	// HTTPAddr is the HTTP API's host:port.
	HTTPAddr string
	// ServerAddr is the server RPC host:port, as /v1/status/leader names it.
	ServerAddr string
	// SerfLANAddr is the LAN gossip host:port (for -retry-join).
	SerfLANAddr string
	// DataDir and LogPath live in the test's temp dir.
	DataDir, LogPath string
	// Token is the ACL token Client uses ("" when ACLs are off).
	Token string

	bin   string
	args  []string
	ports []int // HTTP, Serf LAN, Serf WAN, server RPC

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  <-chan struct{} // closed when the current process has exited
	logFrom int64           // the log's size when the current process started
}

// Option changes how StartDev starts its agent.
type Option func(*devOptions)

type devOptions struct {
	hcl   []string
	token string
}

// WithHCL adds an -hcl fragment to the agent's command line.
func WithHCL(hcl string) Option {
	return func(o *devOptions) { o.hcl = append(o.hcl, hcl) }
}

// WithACL enables ACLs with default_policy deny and a fresh management token,
// which the agent also uses for itself and which Agent.Token holds.
func WithACL() Option {
	return func(o *devOptions) {
		o.token = newUUID()
		o.hcl = append(o.hcl, fmt.Sprintf(
			`acl { enabled = true default_policy = "deny" down_policy = "extend-cache" tokens { initial_management = %q agent = %q } }`,
			o.token, o.token))
	}
}

// StartDev starts a fresh `consul agent -dev` on free loopback ports and
// returns once it is ready. It is stopped on t.Cleanup.
func StartDev(t tb.T, opts ...Option) *Agent {
	t.Helper()
	bin := Binary(t)
	a, retried, err := launchDev(bin, t.TempDir(), opts, freePorts)
	if a != nil {
		tend(t, a)
	}
	logRetried(t, retried)
	if err != nil {
		t.Fatalf("consultest: the dev agent did not start: %v%s", err, requiredNote())
	}
	return a
}

// Launch starts a dev agent as StartDev does, for a program rather than a
// test: the binary is found the same way (FindBinary), its data and log go
// under dir, and the caller must Stop it. On error no process is left.
func Launch(dir string, opts ...Option) (*Agent, error) {
	bin, err := FindBinary()
	if err != nil {
		return nil, err
	}
	a, _, err := launchDev(bin, dir, opts, freePorts)
	if err != nil {
		return nil, fmt.Errorf("consultest: the dev agent did not start: %w", err)
	}
	return a, nil
}

// Stop kills the agent (as Kill does) and waits for it to exit.
func (a *Agent) Stop() { a.kill() }

// launchDev starts and waits for a dev agent with files under dir, on
// ports from pick, retrying as launch does. When it fails, the agent it
// returns (nil if none was prepared) is stopped and only its log is of
// use.
func launchDev(bin, dir string, opts []Option, pick func(int) ([]int, error)) (*Agent, []error, error) {
	var o devOptions
	for _, opt := range opts {
		opt(&o)
	}
	plan := func(attempt int, ports [][]int) []*Agent {
		a := prepareAgent(filepath.Join(dir, strconv.Itoa(attempt)), bin, "dev", ports[0])
		a.Token = o.token
		a.args = append([]string{"agent", "-dev"}, a.commonArgs()...)
		for _, h := range o.hcl {
			a.args = append(a.args, "-hcl", h)
		}
		return []*Agent{a}
	}
	ready := func(ctx context.Context, as []*Agent) error { return as[0].waitReady(ctx, nil) }
	as, retried, err := launch(1, 30*time.Second, pick, plan, ready)
	if len(as) == 0 {
		return nil, retried, err
	}
	return as[0], retried, err
}

// tend has the agents killed on t.Cleanup, and their logs' last lines
// printed first if the test failed.
func tend(t tb.T, agents ...*Agent) {
	for _, a := range agents {
		// Cleanups run last-in first-out: the log tail is printed while
		// the file still exists, then the agent is killed, then the dir
		// removed.
		t.Cleanup(a.kill)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("consultest: last lines of %s (%s):\n%s", a.Name, a.LogPath, a.LogTail(40))
			}
		})
	}
}

// logRetried notes in the test's log each failed start that was retried.
func logRetried(t tb.T, retried []error) {
	for _, err := range retried {
		t.Logf("consultest: retrying with fresh ports: %v", err)
	}
}

// prepareAgent names an agent and places its files under dir.
func prepareAgent(dir, bin, role string, ports []int) *Agent {
	return &Agent{
		Name:        fmt.Sprintf("consultest-%s-%s", role, randomHex(4)),
		HTTPAddr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		SerfLANAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
		ServerAddr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3])),
		DataDir:     filepath.Join(dir, "data"),
		LogPath:     filepath.Join(dir, "agent.log"),
		bin:         bin,
		ports:       ports,
	}
}

// commonArgs are the flags every agent gets: loopback only, its own ports,
// no DNS, no gRPC (unused, and fixed default ports would collide).
func (a *Agent) commonArgs() []string {
	ports := a.ports
	return []string{
		"-node", a.Name,
		"-bind", "127.0.0.1", "-client", "127.0.0.1",
		"-data-dir", a.DataDir,
		"-http-port", strconv.Itoa(ports[0]),
		"-serf-lan-port", strconv.Itoa(ports[1]),
		"-serf-wan-port", strconv.Itoa(ports[2]),
		"-server-port", strconv.Itoa(ports[3]),
		"-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1", "-https-port", "-1",
		"-log-level", "info",
	}
}

// start launches the process in its own process group, appending to the log.
func (a *Agent) start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil {
		return fmt.Errorf("%s is already running", a.Name)
	}
	if err := os.MkdirAll(filepath.Dir(a.LogPath), 0o755); err != nil {
		return err
	}
	a.logFrom = 0
	if fi, err := os.Stat(a.LogPath); err == nil {
		a.logFrom = fi.Size()
	}
	cmd := exec.Command(a.bin, a.args...)
	// Setpgid: cleanup kills the whole group. Pdeathsig: the agent dies with
	// the test binary even if the test is killed before its cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p, err := shardproc.Launch(cmd, a.LogPath)
	if err != nil {
		return err
	}
	a.cmd, a.exited = cmd, p.Done()
	return nil
}

// Kill stops the agent at once with SIGKILL (its whole process group), as a
// crash would, and waits for it to exit. Killing a stopped agent is a no-op.
func (a *Agent) Kill(t tb.T) {
	t.Helper()
	a.kill()
}

func (a *Agent) kill() {
	a.mu.Lock()
	cmd, exited := a.cmd, a.exited
	a.cmd = nil
	a.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
}

// Running reports whether the agent's process is alive.
func (a *Agent) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return false
	}
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}

// Restart starts a killed agent again with the same name, ports and data
// directory, and waits until it is ready.
func (a *Agent) Restart(t tb.T) {
	t.Helper()
	if err := a.Relaunch(60 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// Config returns an API config for this agent (a fresh one per call).
func (a *Agent) Config() *api.Config {
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = a.HTTPAddr
	cfg.Scheme = "http"
	// The test's environment (CONSUL_HTTP_*) must not redirect or
	// re-authenticate a client meant for this agent.
	cfg.Token, cfg.TokenFile = a.Token, ""
	cfg.HttpAuth = nil
	cfg.TLSConfig = api.TLSConfig{}
	cfg.Datacenter, cfg.Namespace, cfg.Partition = "", "", ""
	return cfg
}

// Client returns an API client for this agent. Its idle connections are
// closed on t.Cleanup.
func (a *Agent) Client(t tb.T) *api.Client {
	t.Helper()
	cfg := a.Config()
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatalf("consultest: client for %s: %v", a.Name, err)
	}
	t.Cleanup(cfg.Transport.CloseIdleConnections)
	return c
}

// CLI runs `consul ARGS...` against this agent (e.g. "kv", "put", k, v) and
// returns its combined output; a non-zero exit fails the test.
func (a *Agent) CLI(t tb.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.bin, args...)
	cmd.Env = append(os.Environ(), "CONSUL_HTTP_ADDR="+a.HTTPAddr, "CONSUL_HTTP_TOKEN="+a.Token, "CONSUL_HTTP_SSL=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("consultest: consul %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// LogTail returns the last n lines of the agent's log.
func (a *Agent) LogTail(n int) string {
	b, err := os.ReadFile(a.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// waitReady polls until the agent knows a leader and every node in nodes
// (default: this agent) has a passing serfHealth check in the catalog, the
// precondition for creating sessions, or ctx ends. It gives up early, with
// a *startFailure, if the process dies or logs a bind failure.
func (a *Agent) waitReady(ctx context.Context, nodes []string) error {
	if len(nodes) == 0 {
		nodes = []string{a.Name}
	}
	cfg := a.Config()
	defer cfg.Transport.CloseIdleConnections()
	c, err := api.NewClient(cfg)
	if err != nil {
		return err
	}
	began := time.Now()
	for {
		if err := a.failure(); err != nil {
			return err
		}
		last := ready(ctx, c, nodes)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v (%v): %v", a.Name, time.Since(began).Round(time.Millisecond), context.Cause(ctx), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, c *api.Client, nodes []string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	q := (&api.QueryOptions{}).WithContext(ctx)
	leader, err := c.Status().LeaderWithQueryOptions(q)
	if err != nil {
		return err
	}
	if leader == "" {
		return errors.New("no leader yet")
	}
	for _, n := range nodes {
		checks, _, err := c.Health().Node(n, q)
		if err != nil {
			return err
		}
		ok := false
		for _, ch := range checks {
			if ch.CheckID == "serfHealth" && ch.Status == api.HealthPassing {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("node %s has no passing serfHealth check yet", n)
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newUUID() string {
	h := randomHex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
