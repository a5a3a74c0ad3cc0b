package apilock

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/shardproc"
	"github.com/shardlease/shardlease/internal/offsetlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testWorker is one in-process worker whose connection the test can cut.
type testWorker struct {
	sev    *Severable
	cancel context.CancelFunc
	done   chan struct{}
}

// startWorker runs cfg against agent until the test ends, stop or crash.
func startWorker(t *testing.T, agent *consultest.Agent, cfg Config) *testWorker {
	t.Helper()
	cfg.Consul = agent.Config()
	base := cfg.Consul.Transport
	w := &testWorker{sev: NewSeverable(base), done: make(chan struct{})}
	cfg.Consul.HttpClient = &http.Client{Transport: w.sev}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() {
		defer close(w.done)
		if err := Run(ctx, cfg, nil); err != nil {
			t.Errorf("Run: %v", err)
		}
		base.CloseIdleConnections()
	}()
	t.Cleanup(w.stop)
	return w
}

// stop ends the worker cleanly and waits for Run to return.
func (w *testWorker) stop() {
	w.cancel()
	<-w.done
}

// crash cuts the worker's connection first, so that nothing of its ending
// reaches Consul, then waits for Run to return.
func (w *testWorker) crash() {
	w.sev.Sever()
	w.stop()
}

// holders returns each held shard's holder (the lock's value) and session.
func holders(t *testing.T, c *api.Client, prefix string) (owner, session map[string]string) {
	t.Helper()
	pairs, _, err := c.KV().List(ShardsPrefix(prefix), nil)
	if err != nil {
		t.Fatalf("listing %s: %v", prefix, err)
	}
	owner, session = map[string]string{}, map[string]string{}
	for _, p := range pairs {
		if p.Session != "" {
			s := strings.TrimPrefix(p.Key, ShardsPrefix(prefix))
			owner[s], session[s] = string(p.Value), p.Session
		}
	}
	return owner, session
}

// counts is how many shards each worker holds.
func counts(owner map[string]string) map[string]int {
	n := map[string]int{}
	for _, w := range owner {
		n[w]++
	}
	return n
}

// waitFor polls cond until it holds, failing the test after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not reached within %v; last: %s", what, within, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// spreadWithin waits until every shard is held by the workers ids, none
// holding more than limit.
func spreadWithin(t *testing.T, c *api.Client, prefix string, shards, limit int, ids ...string) map[string]string {
	t.Helper()
	var owner, session map[string]string
	waitFor(t, 30*time.Second, fmt.Sprintf("%d shards held by %v, at most %d each", shards, ids, limit), func() (bool, string) {
		owner, session = holders(t, c, prefix)
		n := counts(owner)
		if len(owner) != shards {
			return false, fmt.Sprint(n)
		}
		for w, k := range n {
			if !slices.Contains(ids, w) || k > limit {
				return false, fmt.Sprint(n)
			}
		}
		return true, ""
	})
	return session
}

// startLog counts each shard's work started and stopped.
type startLog struct {
	mu             sync.Mutex
	started, ended map[string]int
}

func (l *startLog) onStart(s string) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started == nil {
		l.started, l.ended = map[string]int{}, map[string]int{}
	}
	l.started[s]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ended[s]++
	}
}

func (l *startLog) running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for s, k := range l.started {
		n += k - l.ended[s]
	}
	return n
}

func tunedConfig(prefix, id string, shards int, log *startLog) Config {
	return Config{Prefix: prefix, ID: id, Shards: ShardNames(shards), Mode: Tuned,
		TTL: 1500 * time.Millisecond, RenewEvery: 300 * time.Millisecond, LockDelay: 800 * time.Millisecond, OnStart: log.onStart}
}

// TestTunedSharesOneCheckedSessionAndSpreads: three tuned workers over 16
// shards settle with at most ⌈16/3⌉ each, every lock of a worker under its
// one session, bound to a TTL check of its own with the configured
// lock-delay; a worker that stops releases its shards to the others (at
// most ⌈16/2⌉ each now), stops their work, and removes its session and
// check.
func TestTunedSharesOneCheckedSessionAndSpreads(t *testing.T) {
	agent := consultest.StartDev(t)
	c := agent.Client(t)
	const prefix, shards = "apilock/spread", 16
	logs := map[string]*startLog{"w1": {}, "w2": {}, "w3": {}}
	workers := map[string]*testWorker{}
	for _, id := range []string{"w1", "w2", "w3"} {
		workers[id] = startWorker(t, agent, tunedConfig(prefix, id, shards, logs[id]))
	}
	session := spreadWithin(t, c, prefix, shards, 6, "w1", "w2", "w3")
	owner, _ := holders(t, c, prefix)
	byWorker := map[string]string{}
	for s, w := range owner {
		if prev, ok := byWorker[w]; ok && prev != session[s] {
			t.Errorf("%s holds locks under two sessions, %s and %s", w, prev, session[s])
		}
		byWorker[w] = session[s]
	}
	for w, id := range byWorker {
		e, _, err := c.Session().Info(id, nil)
		if err != nil || e == nil {
			t.Fatalf("session %s of %s: %v, %v", id, w, e, err)
		}
		if e.LockDelay != 800*time.Millisecond || len(e.ServiceChecks) != 1 || !strings.HasPrefix(e.ServiceChecks[0].ID, "apilock-"+w+"-") ||
			!slices.Contains(e.NodeChecks, "serfHealth") || e.Behavior != api.SessionBehaviorRelease {
			t.Errorf("session of %s: lock-delay %v, service checks %v, node checks %v, behavior %s; want 800ms, its own apilock check, serfHealth, release",
				w, e.LockDelay, e.ServiceChecks, e.NodeChecks, e.Behavior)
		}
	}

	gone := byWorker["w3"]
	workers["w3"].stop()
	spreadWithin(t, c, prefix, shards, 8, "w1", "w2")
	if n := logs["w3"].running(); n != 0 {
		t.Errorf("w3 stopped with the work of %d shards still running", n)
	}
	if e, _, err := c.Session().Info(gone, nil); err != nil || e != nil {
		t.Errorf("w3's session after its stop: %v, %v; want destroyed", e, err)
	}
	checks, err := c.Agent().Checks()
	if err != nil {
		t.Fatal(err)
	}
	for id := range checks {
		if strings.HasPrefix(id, "apilock-w3-") {
			t.Errorf("w3's check %s is still registered after its stop", id)
		}
	}
}

// TestTunedCrashIsTakenOver: a worker whose connection is cut stops
// passing its check; Consul ends its session and, a lock-delay later, the
// other worker takes every shard and starts their work.
func TestTunedCrashIsTakenOver(t *testing.T) {
	agent := consultest.StartDev(t)
	c := agent.Client(t)
	const prefix, shards = "apilock/crash", 8
	var l1, l2 startLog
	startWorker(t, agent, tunedConfig(prefix, "w1", shards, &l1))
	w2 := startWorker(t, agent, tunedConfig(prefix, "w2", shards, &l2))
	spreadWithin(t, c, prefix, shards, 4, "w1", "w2")
	w2.crash()
	spreadWithin(t, c, prefix, shards, shards, "w1")
	waitFor(t, 10*time.Second, "w1 running all 8 shards", func() (bool, string) {
		return l1.running() == shards, fmt.Sprint(l1.running())
	})
}

// TestDefaultLocksOnePerSession: the default baseline holds each lock
// under a session of its own, with api.Lock's defaults (TTL 15 s,
// lock-delay 15 s), and releases them all when stopped.
func TestDefaultLocksOnePerSession(t *testing.T) {
	agent := consultest.StartDev(t)
	c := agent.Client(t)
	const prefix, shards = "apilock/default", 4
	var log startLog
	cfg := Config{Prefix: prefix, ID: "w1", Shards: ShardNames(shards), Mode: Default, OnStart: log.onStart}
	w := startWorker(t, agent, cfg)
	startWorker(t, agent, Config{Prefix: prefix, ID: "w2", Shards: ShardNames(shards), Mode: Default})
	session := spreadWithin(t, c, prefix, shards, shards, "w1", "w2")
	seen := map[string]bool{}
	for s, id := range session {
		if seen[id] {
			t.Errorf("session %s holds two locks (%s among them)", id, s)
		}
		seen[id] = true
		e, _, err := c.Session().Info(id, nil)
		if err != nil || e == nil || e.TTL != "15s" || e.LockDelay != 15*time.Second {
			t.Errorf("session of %s: %+v, %v; want TTL 15s and lock-delay 15s", s, e, err)
		}
	}
	w.stop()
	if n := log.running(); n != 0 {
		t.Errorf("w1 stopped with the work of %d shards still running", n)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Consul: api.DefaultConfig(), Prefix: "p", ID: "w", Shards: ShardNames(2), Mode: Tuned,
		TTL: time.Second, RenewEvery: 300 * time.Millisecond, LockDelay: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Consul = nil }, "no Consul config"},
		{func(c *Config) { c.ID = "" }, `id ""`},
		{func(c *Config) { c.Shards = nil }, "no shards"},
		{func(c *Config) { c.Mode = "fast" }, `mode "fast"`},
		{func(c *Config) { c.RenewEvery = 2 * time.Second }, "renew 2s"},
		{func(c *Config) { c.LockDelay = -time.Second }, "lock-delay -1s"},
	} {
		c := ok
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
		}
	}
}

// TestApilockdRecordsItsWork: the program holds every shard alone, writes
// an offsetlog start line for each (token 0: no fence), and on SIGTERM
// ends every run, releases every lock and exits 0.
func TestApilockdRecordsItsWork(t *testing.T) {
	agent := consultest.StartDev(t)
	c := agent.Client(t)
	dir := t.TempDir()
	bin, err := shardproc.BuildPackage(dir, "github.com/shardlease/shardlease/internal/harness/apilock/apilockd")
	if err != nil {
		t.Fatal(err)
	}
	const prefix, shards = "apilock/proc", 4
	history := filepath.Join(dir, "w1.jsonl")
	p, err := shardproc.Start(bin, []string{"--consul", agent.HTTPAddr, "--prefix", prefix, "--id", "w1", "--shards", fmt.Sprint(shards),
		"--mode", "tuned", "--ttl", "2s", "--renew", "500ms", "--lock-delay", "1s", "--history", history}, filepath.Join(dir, "w1.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The bounds below are generous on purpose: the promise is that the
	// program stops cleanly, not how fast a starved machine lets it (a
	// stop took over 10 s with the machine's load average at 25).
	const patience = time.Minute
	t.Cleanup(func() { _ = p.Stop(patience) })
	spreadWithin(t, c, prefix, shards, shards, "w1")
	runs := func() []offsetlog.Interval {
		_, ivs, err := offsetlog.ReadAll(history)
		if err != nil {
			t.Fatal(err)
		}
		return ivs
	}
	waitFor(t, patience, "a start line per shard", func() (bool, string) {
		return len(runs()) == shards, fmt.Sprint(runs())
	})
	if err := p.Stop(patience); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exit(); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "w1.log"))
		t.Errorf("apilockd exited with %v after SIGTERM; want 0\n%s", err, b)
	}
	for _, iv := range runs() {
		if iv.Worker != "w1" || iv.Token != 0 || iv.End == math.MaxInt64 || !strings.HasPrefix(string(iv.Shard), "shard-") {
			t.Errorf("run %+v: want w1's, token 0, ended", iv)
		}
	}
	if owner, _ := holders(t, c, prefix); len(owner) != 0 {
		t.Errorf("locks still held after SIGTERM: %v", owner)
	}
}
