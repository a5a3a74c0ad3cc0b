package fleettest

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestUnreachableAtStart: a worker started while its agent is down says
// which address it cannot reach, retries with growing waits, and joins
// normally once the agent is up, leaving no trace of the failed attempts
// (keys, sessions, health checks).
func TestUnreachableAtStart(t *testing.T) {
	agent := consultest.StartDev(t)
	agent.Kill(t)
	prefix := "fleettest/" + randomName()
	p := startWorker(t, "w1", workerArgs(agent.HTTPAddr, prefix, "w1", 8, policyArgs...))

	deadline := time.Now().Add(15 * time.Second)
	var retries []logLine
	for len(retries) < 4 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		retries = p.find("coordinator not reachable; retrying")
	}
	if len(retries) < 4 {
		t.Fatalf("%d retry lines within 15 s, want 4; log:\n%s", len(retries), p.tail(10))
	}
	for _, l := range retries {
		if !strings.Contains(l.Error, agent.HTTPAddr) || !strings.Contains(l.Error, "connection refused") {
			t.Errorf("retry line does not say which address refused the connection: %s", l.raw)
		}
	}
	// The worker's backoff draws attempt n's wait from [c/4, c) with
	// c = 100 ms·2ⁿ: the fourth wait (≥ 200 ms) always exceeds the first
	// (< 100 ms).
	waits := retryWaits(t, retries)
	if waits[3] <= waits[0] {
		t.Errorf("waits between attempts do not grow: %v", waits)
	}
	t.Logf("while the agent is down: %d attempts, waits %v; first error: %s", len(retries), waits, retries[0].Error)
	if !p.running() {
		t.Fatal("the worker exited while Consul was down")
	}

	agent.Restart(t)
	p.waitLog(t, "joined the fleet", 20*time.Second)
	c := agent.Client(t)
	mon := newMonitor(t, prefix, 8, c)
	defer mon.close()
	took, ok := eventually(t.Context(), 15*time.Second, func() bool { return mon.snapshot().converged(8, 1) })
	if !ok {
		counts, owned := mon.snapshot().counts()
		t.Fatalf("the worker owns %d of 8 shards %v after the agent came back: %v", owned, took, counts)
	}
	t.Logf("after the agent came back: the worker owns all 8 shards %v later", took.Round(time.Millisecond))

	// No partial state from the failed attempts: exactly the keys, the one
	// session and the one health check of a worker that joined once.
	keys, _, err := c.KV().Keys(prefix+"/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The ownership history is written by the assignor within a second of
	// its first changes: there or not yet, it is no partial state.
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == prefix+"/history" })
	if len(keys) != 1+1+1+2+8 {
		t.Errorf("keys under the prefix: %q, want the config, one member, the assignor, its assignment (its key and the assignor's memory) and 8 shards (and the history)", keys)
	}
	sessions, _, err := c.Session().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || sessions[0].Name != "w1" {
		t.Errorf("sessions after the outage: %d (%+v), want w1's one", len(sessions), sessions)
	}
	checks, err := c.Agent().Checks()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for id := range checks {
		if strings.HasPrefix(id, consul.CheckIDPrefix) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d shardlease health checks on the agent, want the one of w1's session", n)
	}
}

// retryWaits reads the "in" field (seconds) of retry log lines.
func retryWaits(t *testing.T, ls []logLine) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, l := range ls {
		i := strings.Index(l.raw, `"in":`)
		if i < 0 {
			t.Fatalf("retry line without a wait: %s", l.raw)
		}
		var secs float64
		if _, err := fmtSscan(l.raw[i+5:], &secs); err != nil {
			t.Fatalf("retry line %s: %v", l.raw, err)
		}
		out = append(out, time.Duration(secs*float64(time.Second)).Round(time.Millisecond))
	}
	return out
}

// TestACL: with ACLs on (default deny), a worker without a token stops at
// once with exit status 1 and an error that says what the token needs,
// instead of retrying as if Consul were down. A worker with a token of the
// worker policy in docs/security.md, given in CONSUL_HTTP_TOKEN
// (and the agent in CONSUL_HTTP_ADDR, no flags), joins, owns the fleet and
// stops cleanly.
func TestACL(t *testing.T) {
	agent := consultest.StartDev(t, consultest.WithACL())
	prefix := "fleettest/" + randomName()

	denied := startWorker(t, "w1", workerArgs(agent.HTTPAddr, prefix, "w1", 8, policyArgs...))
	if !denied.wait(15 * time.Second) {
		t.Fatalf("a worker without a token is still running after 15 s; log:\n%s", denied.tail(10))
	}
	if _, err := denied.exit(); err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("exit = %v, want exit status 1", err)
	}
	fatal := denied.find("cannot run")
	if len(fatal) != 1 || !strings.Contains(fatal[0].Error, "permission denied") || !strings.Contains(fatal[0].Error, `key_prefix "`+prefix+`/"`) {
		t.Fatalf("no clear permission error naming the key_prefix the token needs; log:\n%s", denied.tail(10))
	}
	if n := len(denied.find("not reachable")); n > 0 {
		t.Errorf("a permission error was logged %d times as 'not reachable'", n)
	}
	t.Logf("without a token: %s", fatal[0].Error)

	// The worker policy of docs/security.md: the fleet's prefix, sessions
	// on the local agent's node, the shardlease service.
	acl := agent.Client(t).ACL()
	pol, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "shardlease-" + randomName(), Rules: `
key_prefix "` + prefix + `/" { policy = "write" }
session "` + agent.Name + `" { policy = "write" }
service "shardlease" { policy = "write" }
`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := acl.TokenCreate(&api.ACLToken{Policies: []*api.ACLTokenPolicyLink{{ID: pol.ID}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"worker", "--prefix", prefix, "--id", "w2", "--shards", "8", "--log-level", "info"}
	ok := startWorker(t, "w2", append(args, policyArgs...), "CONSUL_HTTP_ADDR="+agent.HTTPAddr, "CONSUL_HTTP_TOKEN="+tok.SecretID)
	mon := newMonitor(t, prefix, 8, agent.Client(t))
	defer mon.close()
	if took, done := eventually(t.Context(), 20*time.Second, func() bool { return mon.snapshot().converged(8, 1) }); !done {
		t.Fatalf("the worker with the worker policy's token in CONSUL_HTTP_TOKEN does not own the fleet after %v; log:\n%s", took, ok.tail(10))
	}
	// It also stops cleanly: releasing, destroying its session and
	// deregistering its check are all within the policy.
	ok.signal(syscall.SIGTERM)
	if !ok.wait(10 * time.Second) {
		t.Fatal("still running 10 s after SIGTERM")
	}
	if _, err := ok.exit(); err != nil {
		t.Errorf("exit after SIGTERM: %v; log:\n%s", err, ok.tail(10))
	}
	for _, l := range ok.lines() {
		if l.Level == "warn" || l.Level == "error" {
			if !strings.Contains(l.Msg, "offsets are kept in memory") {
				t.Errorf("unexpected %s with the worker policy's token: %s", l.Level, l.raw)
			}
		}
	}
}

func fmtSscan(s string, v *float64) (int, error) {
	return fmt.Sscan(strings.TrimRight(strings.SplitN(s, ",", 2)[0], "}"), v)
}
