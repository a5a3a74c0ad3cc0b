package consultest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/tb"
)

// Cluster is a set of Consul servers on loopback that form one datacenter,
// and the client agents joined to them (StartClients).
type Cluster struct {
	// Agents are the servers.
	Agents []*Agent
	// Clients are the client agents, in the order StartClients started
	// them.
	Clients []*Agent

	bin string
}

// fastTiming are the flags that give every agent of a cluster the -dev Raft
// and gossip timing, so that a killed leader is replaced, and a dead node
// marked failed, within seconds; and no UI, Connect or update check, which
// the tests do not use. Servers and clients must agree on the gossip
// timing: a client probing at the default interval would be slow to notice
// a failed server, and the servers' suspicion of it would be mistimed.
var fastTiming = []string{"-retry-interval", "1s",
	"-hcl", "performance { raft_multiplier = 1 }",
	"-hcl", `gossip_lan { gossip_interval = "100ms" probe_interval = "200ms" probe_timeout = "100ms" suspicion_mult = 3 }`,
	"-hcl", "connect { enabled = false }",
	"-hcl", "disable_update_check = true"}

// StartCluster starts n servers (n ≥ 1; three for a real quorum) with
// -bootstrap-expect=n, each retry-joining the others, and returns once they
// agree on a leader and every node is in the catalog. A start in which a
// server exits or fails to bind a port is tried again, all servers on
// fresh ports, up to three times. They are stopped on t.Cleanup.
func StartCluster(t tb.T, n int) *Cluster {
	t.Helper()
	return startCluster(t, n, freePorts)
}

// startCluster is StartCluster with the ports drawn by pick.
func startCluster(t tb.T, n int, pick func(int) ([]int, error)) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("consultest: cluster of %d servers", n)
	}
	bin := Binary(t)
	plan := func(_ int, ports [][]int) []*Agent {
		var servers []*Agent
		for i := range n {
			servers = append(servers, prepareAgent(t.TempDir(), bin, fmt.Sprintf("server%d", i), ports[i]))
		}
		for _, a := range servers {
			a.args = append([]string{"agent", "-server", "-bootstrap-expect", fmt.Sprint(n)}, a.commonArgs()...)
			for _, o := range servers {
				if o != a {
					a.args = append(a.args, "-retry-join", o.SerfLANAddr)
				}
			}
			a.args = append(a.args, fastTiming...)
		}
		return servers
	}
	ready := func(ctx context.Context, servers []*Agent) error {
		return (&Cluster{Agents: servers}).waitReady(ctx)
	}
	servers, retried, err := launch(n, 90*time.Second, pick, plan, ready)
	tend(t, servers...)
	logRetried(t, retried)
	if err != nil {
		t.Fatalf("consultest: the cluster did not start: %v", err)
	}
	return &Cluster{Agents: servers, bin: bin}
}

// WaitReady waits until every running server knows the same leader and every
// running node has a passing serfHealth check.
func (c *Cluster) WaitReady(t tb.T, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := c.waitReady(ctx); err != nil {
		t.Fatalf("consultest: cluster not ready: %v", err)
	}
}

func (c *Cluster) waitReady(ctx context.Context) error {
	running := c.Running()
	var names []string
	for _, a := range running {
		names = append(names, a.Name)
	}
	for _, a := range running {
		if err := a.waitReady(ctx, names); err != nil {
			return err
		}
	}
	_, err := c.agreedLeader(ctx)
	return err
}

// Leader returns the server that every running server names as the Raft
// leader, waiting up to 60 s for them to agree.
func (c *Cluster) Leader(t tb.T) *Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := c.agreedLeader(ctx)
	if err != nil {
		t.Fatalf("consultest: %v", err)
	}
	return l
}

// KillLeader kills the current leader with SIGKILL and returns it (stopped;
// bring it back with Restart).
func (c *Cluster) KillLeader(t tb.T) *Agent {
	t.Helper()
	l := c.Leader(t)
	l.Kill(t)
	return l
}

// KillChosenLeader kills chosen, the server a test found leading when it
// picked the other servers for its clients, and returns it. On a loaded
// machine leadership can move to one of those before the kill; killing
// the current leader would then cut the clients off from their own agent,
// a different fault. The kill is then a server loss without an election,
// which it logs.
func (c *Cluster) KillChosenLeader(t tb.T, chosen *Agent) *Agent {
	t.Helper()
	if now := c.Leader(t); now != chosen {
		t.Logf("consultest: leadership moved from %s to %s before the kill; killing %s, which the test's clients do not use", chosen.Name, now.Name, chosen.Name)
	}
	chosen.Kill(t)
	return chosen
}

// Running returns the servers whose process is alive.
func (c *Cluster) Running() []*Agent {
	var out []*Agent
	for _, a := range c.Agents {
		if a.Running() {
			out = append(out, a)
		}
	}
	return out
}

func (c *Cluster) agreedLeader(ctx context.Context) (*Agent, error) {
	began := time.Now()
	for {
		l, detail := c.leaderOnce(ctx)
		if l != nil {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("servers do not agree on a running leader after %v (%v): %s",
				time.Since(began).Round(time.Millisecond), context.Cause(ctx), detail)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) leaderOnce(ctx context.Context) (*Agent, string) {
	var seen []string
	leader := ""
	for _, a := range c.Running() {
		addr, err := leaderOf(ctx, a)
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", a.Name, err)
		}
		seen = append(seen, a.Name+"→"+addr)
		if addr == "" || (leader != "" && addr != leader) {
			return nil, strings.Join(seen, ", ")
		}
		leader = addr
	}
	for _, a := range c.Running() {
		if a.ServerAddr == leader {
			return a, ""
		}
	}
	return nil, "leader " + leader + " is not a running server: " + strings.Join(seen, ", ")
}

// leaderOf asks one agent whom it believes to be the leader ("" if none).
func leaderOf(ctx context.Context, a *Agent) (string, error) {
	cfg := a.Config()
	defer cfg.Transport.CloseIdleConnections()
	c, err := api.NewClient(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Status().LeaderWithQueryOptions((&api.QueryOptions{}).WithContext(ctx))
}
