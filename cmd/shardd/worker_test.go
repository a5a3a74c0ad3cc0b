package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	offetcd "github.com/shardlease/shardlease/offsets/etcd"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/etcd"
)

// TestWorkerBadCommandLines: `shardd worker` refuses bad flags with exit
// status 2 and names the flag and the value, every problem at once, before
// contacting Consul.
func TestWorkerBadCommandLines(t *testing.T) {
	base := []string{"worker", "--consul", "127.0.0.1:1", "--prefix", "p", "--shards", "8", "--id", "w1"}
	onEtcd := []string{"worker", "--etcd", "127.0.0.1:1", "--prefix", "p", "--shards", "8", "--id", "w1"}
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"worker", "--shards", "8"}, []string{"--prefix is required"}},
		{[]string{"worker", "--prefix", "p"}, []string{"--shards is required"}},
		{append(base, "--prefix", "/p/"), []string{`prefix "/p/"`}},
		{append(base, "--shards", "-1"), []string{"shard count -1 is out of range"}},
		{append(base, "--id", ""), []string{"--id is required"}},
		{append(base, "--id", "a/b"), []string{`worker id "a/b" must not contain`}},
		{append(base, "--ttl", "1s"), []string{"exceeds ttl 1s"}},
		{append(base, "--consul-liveness", "ttl", "--ttl", "5s", "--renew", "1s", "--pause-budget", "1s"),
			[]string{"ttl 5s is outside Consul's session TTL range 10s..24h0m0s"}},
		{append(base, "--consul-liveness", "sometimes"), []string{`want "check" or "ttl"`}},
		{append(base, "--lock-delay", "2m"), []string{"lock-delay 2m0s exceeds Consul's maximum 1m0s"}},
		{append(base, "--lock-delay", "none"), []string{`invalid value "none" for flag -lock-delay: there is no lock-delay of none`}},
		{append(base, "--lock-delay", "-1s"), []string{"lock-delay -1s must not be negative: zero means the default, the ttl"}},
		{append(base, "--drain-timeout", "-1s", "--weight", "-2"), []string{"drain timeout -1s", "weight -2 must not be negative"}},
		{append(base, "--ttl", "1s", "--rate", "0"), []string{"exceeds ttl 1s", "--rate 0"}},
		{[]string{"worker", "--prefix", "p", "--rate", "0"}, []string{"--shards is required", "--rate 0"}},
		{append(base, "--offsets", "mysql://db"), []string{`--offsets "mysql://db": want "consul", "etcd", a postgres:// URL, or "memory" or "bolt" with --allow-local-offsets`}},
		{append(base, "--offsets", "bolt", "--allow-local-offsets"), []string{"--offsets bolt needs --data"}},
		{append(base, "--offsets", "memory"), []string{"--offsets memory keeps offsets in this process only", "--allow-local-offsets"}},
		{append(base, "--offsets", "bolt", "--data", "/tmp"), []string{"--offsets bolt keeps offsets in this process only"}},
		{append(base, "--rate", "0", "--commit-every", "0s"), []string{"--rate 0", "--commit-every 0s"}},
		{append(base, "--log-level", "loud"), []string{`--log-level "loud"`}},
		{append(base, "extra"), []string{`unexpected argument "extra"`}},
		{append(base, "--offsets", "etcd"), []string{"--offsets etcd keeps offsets in etcd, but this worker runs on Consul: use --offsets consul (the default)"}},
		{append(onEtcd, "--offsets", "consul"), []string{"--offsets consul keeps offsets in Consul, but this worker runs on etcd: use --offsets etcd (the default)"}},
		{append(onEtcd, "--consul-liveness", "ttl", "--consul-token", "t"), []string{"--consul-liveness, --consul-token: Consul's, but this member runs on etcd (--etcd); drop them"}},
		{append(onEtcd, "--lock-delay", "2m", "--prefix", "/p/"), []string{"lock-delay 2m0s exceeds the maximum 1m0s", `--prefix "/p/" must not start or end with '/'`}},
		{append(onEtcd, "--etcd-cert", "/nope.pem"), []string{`client certificate "/nope.pem" and key "" go together`}},
		{[]string{"worker", "--etcd", ",", "--prefix", "p", "--shards", "8"}, []string{`invalid value "," for flag -etcd: want at least one endpoint`}},
		{append(base, "--etcd-user", "bob", "--etcd-cacert", "/ca.pem"), []string{"--etcd-cacert, --etcd-user: etcd's, but this member runs on Consul: give --etcd ENDPOINTS too"}},
		{append(onEtcd, "--etcd-user", "bob"), []string{`user "bob" has no password`}},
		{append(onEtcd, "--etcd-cacert", "/nope/ca.pem"), []string{`CA certificate "/nope/ca.pem"`}},
	} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code := run(ctx, tc.args, &out, &errb)
		cancel()
		if code != exitBadInvoke {
			t.Errorf("shardd %v: exit %d, want 2; stderr %q", tc.args, code, errb.String())
			continue
		}
		for _, w := range tc.wants {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("shardd %v: stderr %q does not name %q", tc.args, errb.String(), w)
			}
		}
	}
}

// TestDemoConsulFlags: the Consul flags of `shardd demo` need --consul, and
// TTL liveness needs Consul's minimum TTL.
func TestDemoConsulFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--prefix", "x"}, "--prefix: need --consul ADDR"},
		{[]string{"demo", "--consul-token", "t", "--consul-liveness", "ttl"}, "--consul-liveness, --consul-token: need --consul ADDR"},
		{[]string{"demo", "--consul", "127.0.0.1:1", "--consul-liveness", "ttl", "--ttl", "5s", "--lock-delay", "4s"}, "ttl 5s is outside Consul's session TTL range"},
		{[]string{"demo", "--lock-delay", "none"}, "there is no lock-delay of none"},
		{[]string{"demo", "--ttl", "5s"}, "lock-delay 1s is shorter than the step-down deadline ttl 5s − pause 1s = 4s by 3s"},
		{[]string{"demo", "--consul", "127.0.0.1:1", "--prefix", "a b"}, `prefix "a b"`},
		// TTL liveness stretches the schedule: Consul may take 2×TTL to
		// invalidate a session.
		{[]string{"demo", "--consul", "127.0.0.1:1", "--consul-liveness", "ttl", "--duration", "30s"}, "--duration 30s: want 0 (until Ctrl-C) or at least 1m13.5s"},
	} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code := run(ctx, tc.args, &out, &errb)
		cancel()
		if code != exitBadInvoke || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("shardd %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestWorkerStopsCleanlyWhileConsulIsDown: a worker stopped (SIGTERM) while
// it still retries an unreachable agent exits 0 having said why it waited.
func TestWorkerStopsCleanlyWhileConsulIsDown(t *testing.T) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	code := run(ctx, []string{"worker", "--consul", "127.0.0.1:1", "--prefix", "p", "--shards", "8", "--id", "w1"}, &out, &errb)
	if code != exitOK || !strings.Contains(errb.String(), "coordinator not reachable; retrying") ||
		!strings.Contains(errb.String(), "stopped before joining the fleet") {
		t.Fatalf("exit %d, want 0 after retrying and a clean stop; stderr:\n%s", code, errb.String())
	}
}

// TestWorkersOnEtcd: two `shardd worker --etcd` share a fleet's shards,
// each committing its offsets to etcd (--offsets etcd, the default with
// --etcd) with its claim's token, and stop cleanly; a worker whose etcd
// cannot be reached, with a user to authenticate, waits for it and stops
// cleanly too.
func TestWorkersOnEtcd(t *testing.T) {
	cluster := etcdtest.Start(t)
	prefix := fmt.Sprintf("shardlease-test/workers-%d", time.Now().UnixNano())
	args := func(id string) []string {
		return []string{"worker", "--etcd", strings.Join(cluster.Endpoints(), ","), "--prefix", prefix, "--shards", "4", "--id", id,
			"--ttl", "2s", "--renew", "400ms", "--pause-budget", "1s", "--commit-every", "200ms", "--log-level", "warn"}
	}
	type result struct {
		code int
		errb *bytes.Buffer
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 2)
	for _, id := range []string{"w1", "w2"} {
		go func() {
			var out, errb bytes.Buffer
			done <- result{run(ctx, args(id), &out, &errb), &errb}
		}()
	}
	cli, err := etcd.Connection{Endpoints: cluster.Endpoints()}.Dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	store, err := offetcd.New(offetcd.Config{Client: cli, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ids := shard.Config{Shards: 4}.Normalize().IDs()
	waitUntil(t, 30*time.Second, "every shard committed in etcd with a token", func() bool {
		for _, id := range ids {
			cp, err := store.Load(t.Context(), id)
			if err != nil || cp.Offset == 0 || cp.Token == 0 || cp.Token < cp.Floor {
				return false
			}
		}
		return true
	})
	cancel()
	for range 2 {
		if r := <-done; r.code != exitOK {
			t.Errorf("a worker exited %d:\n%s", r.code, r.errb)
		}
	}

	var out, errb bytes.Buffer
	wctx, wcancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer wcancel()
	code := run(wctx, []string{"worker", "--etcd", "127.0.0.1:1", "--etcd-user", "u:p", "--prefix", "p", "--shards", "8", "--id", "w1", "--etcd-dial-timeout", "200ms"}, &out, &errb)
	if code != exitOK || !strings.Contains(errb.String(), "etcd not reachable; retrying") {
		t.Fatalf("an unreachable etcd with a user: exit %d, want 0 after retrying; stderr:\n%s", code, errb.String())
	}
}
