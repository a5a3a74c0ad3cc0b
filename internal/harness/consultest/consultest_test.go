package consultest_test

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
)

// TestDevAgent: a dev agent starts ready for sessions, answers KV and the
// CLI, and is gone (process group and all) after Kill.
func TestDevAgent(t *testing.T) {
	a := consultest.StartDev(t)
	c := a.Client(t)
	ctx := t.Context()
	sid, _, err := c.Session().Create(&api.SessionEntry{Name: "probe", Behavior: api.SessionBehaviorRelease},
		(&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		t.Fatalf("creating a session right after start: %v", err)
	}
	if _, err := c.KV().Put(&api.KVPair{Key: "probe/a", Value: []byte("1")}, nil); err != nil {
		t.Fatal(err)
	}
	if out := a.CLI(t, "kv", "get", "probe/a"); strings.TrimSpace(out) != "1" {
		t.Fatalf("consul kv get = %q", out)
	}
	if !a.Running() {
		t.Fatal("agent not running")
	}
	_ = sid
	a.Kill(t)
	if a.Running() {
		t.Fatal("agent still running after Kill")
	}
	if out, _ := exec.Command("pgrep", "-f", a.Name).Output(); len(out) > 0 {
		t.Fatalf("a process of %s survived Kill: %s", a.Name, out)
	}
}

// TestClusterLeaderKill: three servers elect a leader; killing it leads to a
// new leader among the other two, and the old one rejoins after a restart.
func TestClusterLeaderKill(t *testing.T) {
	cl := consultest.StartCluster(t, 3)
	old := cl.KillLeader(t)
	start := time.Now()
	nl := cl.Leader(t)
	if nl == old {
		t.Fatalf("the killed server %s is still the leader", old.Name)
	}
	t.Logf("new leader %s after %v", nl.Name, time.Since(start).Round(time.Millisecond))

	// Writes work through a survivor while the old leader is down.
	c := nl.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := c.KV().Put(&api.KVPair{Key: "probe/after-kill", Value: []byte("x")}, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		t.Fatal(err)
	}

	old.Restart(t)
	cl.WaitReady(t, 60*time.Second)
	if len(cl.Running()) != 3 {
		t.Fatalf("%d servers running after restart, want 3", len(cl.Running()))
	}
	kv, _, err := old.Client(t).KV().Get("probe/after-kill", nil)
	if err != nil || kv == nil || string(kv.Value) != "x" {
		t.Fatalf("restarted server does not see the write made without it: %v, %v", kv, err)
	}
}

// TestClusterClients: a client agent joins the servers; a session made
// through it ends when the client is frozen past Serf's failure detection,
// and when it leaves; it is ready again after SIGCONT and after Relaunch.
func TestClusterClients(t *testing.T) {
	cl := consultest.StartCluster(t, 3)
	clients := cl.StartClients(t, 1)
	if len(clients) != 1 || len(cl.Clients) != 1 || clients[0] != cl.Clients[0] {
		t.Fatalf("StartClients returned %d, Clients holds %d", len(clients), len(cl.Clients))
	}
	a := clients[0]
	server := cl.Agents[0].Client(t)
	session := func() string {
		t.Helper()
		sid, _, err := a.Client(t).Session().Create(&api.SessionEntry{Name: "probe", Behavior: api.SessionBehaviorRelease}, nil)
		if err != nil {
			t.Fatalf("creating a session on client %s: %v", a.Name, err)
		}
		return sid
	}
	gone := func(sid, after string) {
		t.Helper()
		start := time.Now()
		deadline := start.Add(30 * time.Second)
		for {
			s, _, err := server.Session().Info(sid, nil)
			if err == nil && s == nil {
				t.Logf("session gone %v after %s", time.Since(start).Round(time.Millisecond), after)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s of client %s still there 30 s after %s (%v)", sid, a.Name, after, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	sid := session()
	if err := a.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	gone(sid, "SIGSTOP")
	if err := a.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := a.AwaitReady(30 * time.Second); err != nil {
		t.Fatalf("after SIGCONT: %v", err)
	}

	sid = session()
	if err := a.Leave(); err != nil {
		t.Fatal(err)
	}
	if a.Running() {
		t.Fatal("client still running after Leave")
	}
	gone(sid, "leave")
	if err := a.Signal(syscall.SIGSTOP); err == nil {
		t.Error("Signal to a client that left succeeded")
	}
	if err := a.Relaunch(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	session() // sessions can be made through it again
}
