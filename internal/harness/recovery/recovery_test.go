package recovery

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/harness/chaos"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/pgtest"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/harness/shardproc"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

const (
	workers, shards = 6, 32
	// floor is where the store's floors start: the history of a Consul
	// whose index passed a million, which no agent started here reaches.
	floor = 1_000_000
	// ownedWithin is the runbook's promise after a recovery.
	ownedWithin = 30 * time.Second
)

var workerArgs = []string{"--rate", "20", "--commit-every", "300ms", "--log-level", "info",
	"--ttl", "2s", "--renew", "400ms", "--pause-budget", "1s", "--lock-delay", "1s"}

// TestRecoverALostHistory: a fleet whose store floors are above 10^6
// starts on a Consul at index ~100 and owns nothing (every fence refused)
// until Recover raises the generation; then the Consul is replaced by one
// rebuilt empty for every worker but w1, which stays on the old one and
// takes all the shards there; the others restore the fleet's config, are
// refused again, and a second Recover on the new Consul gives them every
// shard back while w1 keeps running, or trying, and is refused once a new
// owner fenced.
func TestRecoverALostHistory(t *testing.T) {
	dir := t.TempDir()
	bin, err := shardproc.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	oldAgent := consultest.StartDev(t)
	dsn := pgtest.Start(t).NewDatabase(t)
	prefix := fmt.Sprintf("recovery/%d", time.Now().UnixNano())
	store, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ids := shard.Config{Shards: shards}.IDs()
	for i, id := range ids {
		if err := store.Fence(t.Context(), id, shard.Token(floor+i)); err != nil {
			t.Fatal(err)
		}
	}

	procs, err := procfleet.New(procfleet.Config{Bin: bin, Dir: dir,
		Args: append([]string{"worker", "--prefix", prefix, "--shards", fmt.Sprint(shards), "--offsets", dsn}, workerArgs...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = procs.Stop(30 * time.Second) })
	proxies := make([]*chaos.Proxy, workers)
	for i := range proxies {
		if proxies[i], err = chaos.NewProxy(oldAgent.HTTPAddr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proxies[i].Close() })
		if _, err := procs.Add(fmt.Sprintf("w%d", i+1), "--consul", proxies[i].Addr()); err != nil {
			t.Fatal(err)
		}
	}

	// On the old Consul: members join, nothing runs, Recover raises 0 → 1.
	oldOp := operator(t, oldAgent, prefix)
	waitFleet(t, oldOp, "the workers join the first Consul", func(s shard.Snapshot) bool { return s.Config != nil && live(s) == workers })
	first := recoverAndWait(t, oldOp, store, 1, true)

	// The rebuild: every worker but w1 now reaches an empty Consul.
	newAgent := consultest.StartDev(t)
	rebuilt := time.Now()
	for _, p := range proxies[1:] {
		p.Retarget(newAgent.HTTPAddr)
	}
	newOp := operator(t, newAgent, prefix)
	waitFleet(t, newOp, "the workers rejoin the rebuilt Consul and restore the fleet's config",
		func(s shard.Snapshot) bool { return s.Config != nil && live(s) == workers-1 })
	waitFleet(t, oldOp, "w1 takes every shard on the old Consul", func(s shard.Snapshot) bool { return held(s, 1) == shards })
	time.Sleep(3 * time.Second) // w1 commits there, in generation 1
	// The five wrote the fleet's config again in generation 0 (nothing is
	// carried over: see docs/design.md, "Token generations"), so every
	// floor, of generation 1, is behind.
	second := recoverAndWait(t, newOp, store, 2, true)
	time.Sleep(5 * time.Second) // w1 still runs, or tries, its shards on the old Consul, and is refused

	if err := procs.Stop(30 * time.Second); err != nil {
		t.Errorf("stopping the fleet: %v", err)
	}
	ops, runs, err := chaos.ReadFinal(t.Context(), dsn, dir, shards, procs.HistoryFiles())
	if err != nil {
		t.Fatal(err)
	}
	v := chaos.NewHistory(ops).Check()
	if v.StaleAccepted > 0 || len(v.Problems) > 0 || v.Accepted == 0 {
		t.Errorf("offsets: %d commits accepted, %d stale accepted; problems:\n%s", v.Accepted, v.StaleAccepted, strings.Join(v.Problems, "\n"))
	}
	var refused, acceptedAfter int
	for _, o := range ops {
		if o.Worker != "w1" || o.Kind == offsetlog.OpLoad || o.Start < second.UnixNano() {
			continue
		}
		switch o.Result {
		case offsetlog.ResultStale:
			refused++
		case offsetlog.ResultOK:
			acceptedAfter++
		}
	}
	if refused == 0 {
		t.Errorf("w1, left on the old Consul, had no commit or fence refused after the second recovery: it did not keep running, and the test proved nothing")
	}
	// Until a shard is fenced in generation 2, w1 may still commit it;
	// none of those is stale (checked above), and none after.
	t.Logf("first recovery: %d of %d shards behind, every shard owned %v after it; second: %d behind, owned %v after it (%v after the rebuild); w1 on the old Consul after the second: %d writes refused, %d accepted before the new owners fenced; %d commits accepted in all",
		first.behind, shards, first.took.Round(time.Millisecond), second.behind, second.took.Round(time.Millisecond), second.Sub(rebuilt).Round(time.Millisecond), refused, acceptedAfter, v.Accepted)

	// Two processes on one shard are expected only between w1 (old
	// Consul) and the new fleet after the rebuild: check every other pair.
	var single []offsetlog.Interval
	for _, iv := range chaos.CloseRuns(runs, procs.Lives()) {
		if iv.Worker == "w1" && iv.End > rebuilt.UnixNano() {
			continue
		}
		single = append(single, iv)
	}
	rv := chaos.CheckRuns(single, nil, time.Second)
	for _, o := range rv.Overlaps {
		t.Errorf("two processes on one shard with one coordinator: %s", o)
	}
}

// recovered is when a recovery raised the generation and how long the
// fleet then took to own every shard in it.
type recovered struct {
	time.Time
	took   time.Duration
	behind int
}

// recoverAndWait checks that the coordinator's history is behind (for
// every shard with all), recovers to generation want, and waits until the
// fleet is recovered (admin.Recovered: every shard held, those behind at
// or above their floors).
func recoverAndWait(t *testing.T, op admin.Operator, store *postgres.Store, want uint32, all bool) recovered {
	t.Helper()
	check, err := op.CheckRecovery(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Behind) == 0 || all && len(check.Behind) != shards || check.To != want {
		t.Fatalf("before recovery %d: %d shards behind, to generation %d; want %s behind, to %d", want, len(check.Behind), check.To,
			map[bool]string{true: fmt.Sprintf("all %d", shards), false: "some"}[all], want)
	}
	if s := snapshot(t, op); held(s, want) > 0 {
		t.Fatalf("%d shards held in generation %d before the recovery", held(s, want), want)
	}
	r, err := op.Recover(t.Context(), store, false)
	if err != nil || !r.Raised || r.Config.Generation != want {
		t.Fatalf("Recover = %+v, %v; want generation %d", r, err, want)
	}
	at := time.Now()
	waitFleet(t, op, fmt.Sprintf("every shard owned, those behind in generation %d, within %v of the recovery", want, ownedWithin),
		func(s shard.Snapshot) bool { return admin.Recovered(s, r) })
	took := time.Since(at)
	if took > ownedWithin {
		t.Errorf("every shard owned %v after recovery %d, want within %v", took, want, ownedWithin)
	}
	return recovered{Time: at, took: took, behind: len(r.Behind)}
}

func operator(t *testing.T, agent *consultest.Agent, prefix string) admin.Operator {
	t.Helper()
	cfg := consul.DefaultConfig()
	cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile = agent.HTTPAddr, "http", agent.Token, ""
	cfg.Prefix, cfg.MemberGrace = prefix, time.Hour
	c, err := consul.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return admin.Operator{Coordinator: c, Name: prefix}
}

func snapshot(t *testing.T, op admin.Operator) shard.Snapshot {
	t.Helper()
	s, err := op.Coordinator.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFleet polls the fleet until cond holds, for at most a minute.
func waitFleet(t *testing.T, op admin.Operator, what string, cond func(shard.Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := snapshot(t, op)
		if cond(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within a minute: %s (%d live members, %d shards held)", what, live(s), held(s, 0))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func live(s shard.Snapshot) int {
	n := 0
	for _, m := range s.Members {
		if m.Live() {
			n++
		}
	}
	return n
}

// held counts the shards held with a token of generation gen or later.
func held(s shard.Snapshot, gen uint32) int {
	n := 0
	for _, st := range s.Shards {
		if st.Held() && st.Token.Generation() >= gen {
			n++
		}
	}
	return n
}
