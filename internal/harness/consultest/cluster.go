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
// agree on a leader and every node is in the catalog. They are stopped on
// t.Cleanup.
func StartCluster(t tb.T, n int) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("consultest: cluster of %d servers", n)
	}
	bin := Binary(t)
	ports, err := freePorts(4 * n)
	if err != nil {
		t.Fatalf("consultest: picking free ports: %v", err)
	}
	c := &Cluster{bin: bin}
	for i := range n {
		c.Agents = append(c.Agents, newAgent(t, bin, fmt.Sprintf("server%d", i), ports[4*i:4*i+4]))
	}
	for i, a := range c.Agents {
		a.args = append([]string{"agent", "-server", "-bootstrap-expect", fmt.Sprint(n)},
			a.commonArgs(ports[4*i:4*i+4])...)
		for _, o := range c.Agents {
			if o != a {
				a.args = append(a.args, "-retry-join", o.SerfLANAddr)
			}
		}
		a.args = append(a.args, fastTiming...)
		if err := a.start(); err != nil {
			t.Fatalf("consultest: starting %s: %v", a.Name, err)
		}
	}
	c.WaitReady(t, 90*time.Second)
	return c
}

// WaitReady waits until every running server knows the same leader and every
// running node has a passing serfHealth check.
func (c *Cluster) WaitReady(t tb.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var names []string
	for _, a := range c.Agents {
		if a.Running() {
			names = append(names, a.Name)
		}
	}
	for _, a := range c.Agents {
		if !a.Running() {
			continue
		}
		if err := a.waitReady(time.Until(deadline), names); err != nil {
			t.Fatalf("consultest: cluster not ready: %v", err)
		}
	}
	if _, err := c.agreedLeader(time.Until(deadline)); err != nil {
		t.Fatalf("consultest: cluster not ready: %v", err)
	}
}

// Leader returns the server that every running server names as the Raft
// leader, waiting up to 60 s for them to agree.
func (c *Cluster) Leader(t tb.T) *Agent {
	t.Helper()
	l, err := c.agreedLeader(60 * time.Second)
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

func (c *Cluster) agreedLeader(within time.Duration) (*Agent, error) {
	deadline := time.Now().Add(within)
	var last string
	for {
		l, detail := c.leaderOnce()
		if l != nil {
			return l, nil
		}
		last = detail
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("servers do not agree on a running leader within %v: %s", within, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *Cluster) leaderOnce() (*Agent, string) {
	var seen []string
	leader := ""
	for _, a := range c.Running() {
		addr, err := leaderOf(a)
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
func leaderOf(a *Agent) (string, error) {
	cfg := a.Config()
	defer cfg.Transport.CloseIdleConnections()
	c, err := api.NewClient(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Status().LeaderWithQueryOptions((&api.QueryOptions{}).WithContext(ctx))
}
