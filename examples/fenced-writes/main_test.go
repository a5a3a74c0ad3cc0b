package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/examples/internal/engine"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The transcript, step by step: A writes with its token, is paused, B takes
// over with a higher token and writes, A's delayed write is rejected, and
// the final value is B's.
var wantSteps = []*regexp.Regexp{
	regexp.MustCompile(`^A  acquired stream/shard-000 with token (\d+)$`),
	regexp.MustCompile(`^A  writes "leader-a-started" with token \d+: accepted$`),
	regexp.MustCompile(`^B  joined as a standby`),
	regexp.MustCompile(`^A  paused \(stop-the-world\)`),
	regexp.MustCompile(`^B  acquired stream/shard-000 with token \d+, .* after A's pause \(orphaned: A's session invalidated\)$`),
	regexp.MustCompile(`^B  writes "leader-b-committed" with token \d+: accepted$`),
	regexp.MustCompile(`^A  resumes and sends its delayed write "leader-a-resumed" with token \d+: rejected: stale token \d+ < \d+$`),
	regexp.MustCompile(`^final value "leader-b-committed" \(token \d+\): B's write stands$`),
}

func checkTranscript(t *testing.T, res outcome, out string) {
	t.Helper()
	t.Logf("transcript:\n%s", out)
	if !res.ok() {
		t.Errorf("outcome %+v: want A's first write and B's write accepted, A's late write rejected, B's value final with B's higher token", res)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	i := 0
	for _, l := range lines {
		if i < len(wantSteps) && wantSteps[i].MatchString(l) {
			i++
		}
	}
	if i < len(wantSteps) {
		t.Errorf("transcript lacks, in order, a line matching %q", wantSteps[i])
	}
}

func TestStoryOnTheEmbeddedCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		res, err := run(t.Context(), embeddedOptions(), &out)
		if err != nil {
			t.Fatal(err)
		}
		checkTranscript(t, res, out.String())
		// The embedded coordinator expires a session exactly at its TTL:
		// B cannot take over before that, and not much later either.
		if p := embeddedOptions().policy; res.takeover < p.TTL-p.RenewEvery || res.takeover > 2*p.TTL {
			t.Errorf("B took over %v after A's pause, want within [TTL − renew, 2·TTL] = [%v, %v]", res.takeover, p.TTL-p.RenewEvery, 2*p.TTL)
		}
	})
}

func TestStoryOnConsul(t *testing.T) {
	agent := consultest.StartDev(t)
	cfg := consul.DefaultConfig()
	cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile = agent.HTTPAddr, "http", "", ""
	cfg.Prefix = "shardlease-examples/fenced-writes-test"
	var choice engine.Choice
	choice.Consul(cfg)
	var out bytes.Buffer
	res, err := run(t.Context(), sharedOptions(&choice), &out)
	if err != nil {
		t.Fatal(err)
	}
	checkTranscript(t, res, out.String())
	if keys, _, err := agent.Client(t).KV().Keys(cfg.Prefix+"/", "", nil); err != nil || len(keys) != 0 {
		t.Errorf("keys left under %s: %v (%v)", cfg.Prefix, keys, err)
	}
}

func TestStoryOnEtcd(t *testing.T) {
	cluster := etcdtest.Start(t)
	const prefix = "shardlease-examples/fenced-writes-test"
	var choice engine.Choice
	choice.Etcd(cluster.Endpoints(), prefix)
	var out bytes.Buffer
	res, err := run(t.Context(), sharedOptions(&choice), &out)
	if err != nil {
		t.Fatal(err)
	}
	checkTranscript(t, res, out.String())
	if !strings.Contains(res.coordName, "etcd at ") {
		t.Errorf("the story ran on %s, want etcd", res.coordName)
	}
	cli, err := etcd.Connection{Endpoints: cluster.Endpoints()}.Dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if resp, err := cli.Get(t.Context(), prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("keys left under %s: %v (%v)", prefix, resp, err)
	}
}

func TestCommandLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := cli(context.Background(), nil, &out, &errb); code != 0 {
			t.Fatalf("exit %d; stderr %s", code, errb.String())
		}
		if !strings.Contains(out.String(), "B's write stands") {
			t.Errorf("output:\n%s", out.String())
		}
	})
	var errb bytes.Buffer
	if code := cli(context.Background(), []string{"--consul-liveness", "sometimes"}, &bytes.Buffer{}, &errb); code != 2 {
		t.Errorf("bad flag: exit %d, want 2 (stderr %s)", code, errb.String())
	}
	errb.Reset()
	if code := cli(context.Background(), []string{"--consul", "127.0.0.1:1", "--etcd", "127.0.0.1:2"}, &bytes.Buffer{}, &errb); code != 2 || !strings.Contains(errb.String(), "--consul and --etcd") {
		t.Errorf("both engines: exit %d, want 2 naming both (stderr %s)", code, errb.String())
	}
}
