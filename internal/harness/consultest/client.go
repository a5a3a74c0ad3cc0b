package consultest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/internal/harness/tb"
)

// StartClients starts n client agents joined to the cluster's servers, as
// production runs one agent per host and its applications talk to that
// agent, not to a server: sessions created through a client belong to the
// client's node, so they end when Serf marks that node failed or it
// leaves. Each gets the servers' gossip timing, loopback ports of its own
// and a data directory in t.TempDir(). It returns once every client knows
// the leader and has a passing serfHealth check in the catalog; they are
// stopped on t.Cleanup and appended to c.Clients. A start in which a
// client exits or fails to bind a port is tried again, all n clients on
// fresh ports, up to three times.
func (c *Cluster) StartClients(t tb.T, n int) []*Agent {
	t.Helper()
	return c.startClients(t, n, freePorts)
}

// startClients is StartClients with the ports drawn by pick.
func (c *Cluster) startClients(t tb.T, n int, pick func(int) ([]int, error)) []*Agent {
	t.Helper()
	plan := func(_ int, ports [][]int) []*Agent {
		var out []*Agent
		for i := range n {
			a := prepareAgent(t.TempDir(), c.bin, "client", ports[i])
			a.args = append([]string{"agent"}, a.commonArgs()...)
			for _, s := range c.Agents {
				a.args = append(a.args, "-retry-join", s.SerfLANAddr)
			}
			a.args = append(a.args, fastTiming...)
			out = append(out, a)
		}
		return out
	}
	ready := func(ctx context.Context, clients []*Agent) error {
		for _, a := range clients {
			if err := a.waitReady(ctx, nil); err != nil {
				return err
			}
		}
		return nil
	}
	out, retried, err := launch(n, 60*time.Second, pick, plan, ready)
	tend(t, out...)
	logRetried(t, retried)
	if err != nil {
		t.Fatalf("consultest: the clients did not start: %v", err)
	}
	c.Clients = append(c.Clients, out...)
	return out
}

// The methods below inject and heal faults. They return errors instead of
// failing a test, so that a fault harness may call them from its own
// goroutines.

// Signal sends sig to the agent's process group: SIGSTOP freezes the
// agent (its node stops answering gossip and its HTTP API hangs), SIGCONT
// resumes it. It fails when the agent is not running.
func (a *Agent) Signal(sig syscall.Signal) error {
	a.mu.Lock()
	cmd := a.cmd
	a.mu.Unlock()
	if cmd == nil || !a.Running() {
		return fmt.Errorf("consultest: %s is not running, cannot send it %v", a.Name, sig)
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("consultest: sending %v to %s: %w", sig, a.Name, err)
	}
	return nil
}

// Leave runs `consul leave` against the agent, a graceful departure: the
// cluster marks its node left at once (its sessions end), and the agent
// exits. It waits up to 30 s for the process to exit. Relaunch brings it
// back.
func (a *Agent) Leave() error {
	a.mu.Lock()
	exited := a.exited
	a.mu.Unlock()
	if exited == nil || !a.Running() {
		return fmt.Errorf("consultest: %s is not running, cannot leave", a.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.bin, "leave")
	cmd.Env = append(os.Environ(), "CONSUL_HTTP_ADDR="+a.HTTPAddr, "CONSUL_HTTP_TOKEN="+a.Token, "CONSUL_HTTP_SSL=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("consultest: consul leave on %s: %v: %s", a.Name, err, out)
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("consultest: %s still running 30 s after consul leave", a.Name)
	}
}

// Relaunch kills the agent if it still runs, starts it again with the same
// name, ports and data directory, and waits up to within for it to be
// ready (it knows a leader and its node's serfHealth passes). On error the
// agent may be left running; cleanup stops it.
func (a *Agent) Relaunch(within time.Duration) error {
	a.kill()
	if err := a.start(); err != nil {
		return fmt.Errorf("consultest: restarting %s: %w", a.Name, err)
	}
	return a.AwaitReady(within)
}

// AwaitReady waits up to within until the agent knows a leader and its
// node's serfHealth check passes in the catalog, as after a start, or
// after a SIGCONT once the cluster has taken the node back.
func (a *Agent) AwaitReady(within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := a.waitReady(ctx, nil); err != nil {
		return fmt.Errorf("consultest: %w", err)
	}
	return nil
}
