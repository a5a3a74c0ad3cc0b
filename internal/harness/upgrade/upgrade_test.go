package upgrade

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/harness/chaos"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/pgtest"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/harness/shardproc"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// The fleet: 12 workers over 128 shards, on the default lease (given as
// flags, for the previous release's binary), with a rejoin grace above a
// restart's down time. The roll's promise is that no shard moves; a
// worker that steps down because a starved machine kept it from renewing
// for longer than its pause budget gives its shards up, which is another
// matter: chaos's 1 s budget did, once in a flake check beside the chaos
// suite (33 moves).
const (
	workers, shards = 12, 128
	maxGap          = 4 * time.Second
)

var workerArgs = []string{"--rate", "20", "--commit-every", "500ms", "--log-level", "info",
	"--ttl", "5s", "--renew", "1s", "--pause-budget", "2500ms", "--lock-delay", "3s", "--rejoin-grace", "10s"}

// previousRelease reads release/previous: its last line that is not a
// comment names the version and the commit.
func previousRelease(t *testing.T, root string) (version, commit string) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "release", "previous"))
	if err != nil {
		t.Fatalf("the previous release is recorded in release/previous: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			t.Fatalf("release/previous: %q is not \"<version> <commit>\"", line)
		}
		version, commit = fields[0], fields[1]
	}
	if commit == "" {
		t.Fatal("release/previous names no release")
	}
	return version, commit
}

// TestRollForwardAndBack rolls a fleet from the previous release to this
// tree and back, one worker at a time, each stopped with its rejoin grace
// (SIGTERM) and started again under its ID with the other binary once the
// fleet is ready again. Over both rolls: no instant of two processes on
// one shard, no stale commit accepted and no offset back (the histories
// of every offsets call, a final load of every shard), no shard handed to
// another worker, and no shard without a running handler for more than
// maxGap.
func TestRollForwardAndBack(t *testing.T) {
	root, err := shardproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, commit := previousRelease(t, root)
	dir := t.TempDir()
	var oldBin, newBin string
	var oldErr, newErr error
	var wg sync.WaitGroup
	wg.Go(func() { oldBin, oldErr = shardproc.BuildAt(dir, root, commit) })
	wg.Go(func() { newBin, newErr = shardproc.Build(dir) })
	wg.Wait()
	if oldErr != nil || newErr != nil {
		t.Fatalf("building shardd %s (%s): %v; this tree: %v", version, commit, oldErr, newErr)
	}

	agent := consultest.StartDev(t)
	dsn := pgtest.Start(t).NewDatabase(t)
	prefix := fmt.Sprintf("upgrade/%d", time.Now().UnixNano())
	args := append([]string{"worker", "--consul", agent.HTTPAddr, "--prefix", prefix, "--shards", fmt.Sprint(shards), "--offsets", dsn}, workerArgs...)
	procs, err := procfleet.New(procfleet.Config{Bin: oldBin, Dir: dir, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = procs.Stop(30 * time.Second) })
	obs, err := procfleet.NewObserver(consul.Config{Address: agent.HTTPAddr, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()

	for i := range workers {
		if _, err := procs.Add(fmt.Sprintf("w%02d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitReady(t, obs, 90*time.Second); err != nil {
		t.Fatalf("the fleet of release %s: %v", version, err)
	}
	began := time.Now()

	// running is the one version every live member writes in its member
	// key: which build runs (the previous release's differs from the
	// tree's, by release or by commit).
	running := func() string {
		snap, err := obs.Snapshot(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range snap.Members {
			if m.Live() {
				seen[fmt.Sprintf("%q (protocol %d)", m.Version, m.Speaks())] = true
			}
		}
		if len(seen) != 1 {
			t.Fatalf("live members run %v, want one build", slices.Sorted(maps.Keys(seen)))
		}
		return slices.Collect(maps.Keys(seen))[0]
	}
	previous := running()
	// history reads P/history: its value and index.
	hc, err := consul.New(consul.Config{Address: agent.HTTPAddr, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	history := func() ([]byte, uint64) {
		v, idx, err := hc.History().Read(t.Context())
		if err != nil {
			t.Fatalf("reading P/history: %v", err)
		}
		return v, idx
	}
	// The rules step: rules are refused while a worker of the previous
	// release is live (it reads P/policy strictly), and accepted, then
	// cleared as the docs ask before a roll back, once none is. The rule
	// prefers a label no worker has, so it moves nothing.
	op := admin.Operator{Coordinator: hc, Name: prefix}
	rules := []shard.PlacementRule{{Shards: "*", Kind: shard.RulePrefer, Labels: map[string]string{"disk": "none-such"}}}
	if _, err := hc.Fleet().SetPolicy(t.Context(), shard.BalancePolicy{}, false); err != nil {
		t.Fatalf("storing the default balance policy: %v", err)
	}
	refusesRules := func(when string) {
		t.Helper()
		if _, err := op.SetRules(t.Context(), rules, false); !errors.Is(err, admin.ErrStepMissing) {
			t.Fatalf("placement rules %s: %v, want a refusal naming the workers of release %s", when, err, version)
		}
		// The standbys step likewise: a policy with standbys is refused.
		// (The workers' handlers have no standby side, so none would be
		// given: the step's gate is what is checked.)
		if _, err := op.SetStandbys(t.Context(), 1, 0); !errors.Is(err, admin.ErrStepMissing) {
			t.Fatalf("standbys %s: %v, want a refusal naming the workers of release %s", when, err, version)
		}
		// The reshard step likewise: release 0.1.0 would run the old
		// shards again, so no reshard starts while one is live.
		if _, err := op.Reshard(t.Context(), admin.ReshardPlan{Shards: 2 * shards}); !errors.Is(err, admin.ErrStepMissing) {
			t.Fatalf("a reshard %s: %v, want a refusal naming the workers of release %s", when, err, version)
		}
	}
	roll := func(bin, to string, after func(i int)) {
		for i, w := range procs.Workers() {
			if err := w.Stop(30 * time.Second); err != nil {
				t.Fatalf("stopping %s: %v", w.ID, err)
			}
			w.UseBinary(bin)
			if err := w.Start(); err != nil {
				t.Fatalf("starting %s on %s: %v", w.ID, to, err)
			}
			if err := waitReady(t, obs, 60*time.Second); err != nil {
				t.Fatalf("the fleet after %s restarted on %s: %v; the end of its log:\n%s", w.ID, to, err, tail(w.Log, 20))
			}
			after(i)
		}
		t.Logf("rolled to %s in %v", to, time.Since(began).Round(time.Millisecond))
	}
	// The history step: nothing is recorded while a worker of the
	// previous release is live; once none is, the log is written.
	roll(newBin, "this tree", func(i int) {
		if v, _ := history(); i < workers-1 && v != nil {
			t.Fatalf("P/history was written while %d workers of release %s were live: %.200s", workers-1-i, version, v)
		}
		if i < workers-1 {
			refusesRules(fmt.Sprintf("with %d workers of the previous release live", workers-1-i))
		}
	})
	if _, err := op.SetRules(t.Context(), rules, false); err != nil {
		t.Fatalf("placement rules once every worker runs the tree: %v", err)
	}
	if _, err := op.SetStandbys(t.Context(), 1, 20*time.Second); err != nil {
		t.Fatalf("standbys once every worker runs the tree: %v", err)
	}
	if snap, err := hc.Fleet().Watch(t.Context(), 0); err != nil || snap.Policy == nil || len(snap.Policy.Rules) != 1 || snap.Policy.Standbys != 1 {
		t.Fatalf("after the rules and standbys were set the fleet's policy is %v (%v), want one rule and one standby a shard", snap.Policy, err)
	}
	if now := running(); now == previous {
		t.Fatalf("after the roll forward the members still run %s, the previous release's build", now)
	}
	var recorded uint64
	for deadline := time.Now().Add(15 * time.Second); recorded == 0; time.Sleep(200 * time.Millisecond) {
		if _, recorded = history(); recorded == 0 && time.Now().After(deadline) {
			t.Fatal("P/history not written within 15 s of the roll forward's end")
		}
	}
	if _, err := op.SetRules(t.Context(), nil, false); err != nil {
		t.Fatalf("clearing the placement rules before the roll back: %v", err)
	}
	if _, err := op.SetStandbys(t.Context(), 0, 0); err != nil {
		t.Fatalf("clearing the standbys before the roll back: %v", err)
	}
	roll(oldBin, "release "+version, func(i int) {
		refusesRules("with a worker of the previous release live")
		switch _, idx := history(); {
		case i == 0:
			recorded = idx
		case idx != recorded:
			t.Fatalf("P/history written again (index %d, was %d) while a worker of release %s was live", idx, recorded, version)
		}
	})
	if now := running(); now != previous {
		t.Fatalf("after the roll back the members run %s, want the previous release's %s", now, previous)
	}

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
	rv := chaos.CheckRuns(chaos.CloseRuns(runs, procs.Lives()), nil, time.Second)
	for _, o := range rv.Overlaps {
		t.Errorf("two processes on one shard: %s", o)
	}
	for _, p := range rv.Problems {
		t.Errorf("handler runs: %s", p)
	}
	moves, longest, where := offsetlog.Handoffs(runs, began.UnixNano())
	t.Logf("%d handler runs, %d commits accepted; %d moves; longest without a handler %v (%s)", rv.Runs, v.Accepted, moves, longest.Round(time.Millisecond), where)
	if moves > 0 {
		for _, w := range procs.Workers() {
			for _, l := range linesWith(w.Log, "stepped down", "rejoining the fleet", "process paused") {
				t.Logf("%s: %s", w.ID, l)
			}
		}
		t.Errorf("%d shards moved to another worker during the rolls, want none: each worker's shards wait for it in its rejoin grace", moves)
	}
	if longest > maxGap {
		t.Errorf("%s had no running handler for %v, want at most %v", where, longest.Round(time.Millisecond), maxGap)
	}
	refusesResharded(t, oldBin, agent.HTTPAddr)
}

// refusesResharded: a worker of the previous release refuses, naming the
// protocol, a fleet that a reshard made protocol 4, whether it brings the
// fleet's first shard set (which it would otherwise run again beside the
// children) or the current one; a worker of this tree joins it.
func refusesResharded(t *testing.T, oldBin, addr string) {
	prefix := fmt.Sprintf("upgrade/resharded/%d", time.Now().UnixNano())
	c, err := consul.New(consul.Config{Address: addr, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := shard.Config{Shards: 8}
	if _, err := c.Fleet().Configure(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fleet().SetLayouts(t.Context(), nil, []shard.Layout{{Shards: 16, Name: "stream/shard.r1", Lineage: shard.LineageMod, Started: shard.Mark{By: "test"}}}); err != nil {
		t.Fatal(err)
	}
	for _, brings := range [][]string{{"--shards", "8"}, {"--shards", "16", "--shard-name", "stream/shard.r1"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		args := append([]string{"worker", "--consul", addr, "--prefix", prefix, "--id", "old"}, brings...)
		out, err := osexec.CommandContext(ctx, oldBin, args...).CombinedOutput()
		timedOut := ctx.Err()
		cancel()
		if err == nil || timedOut != nil || !strings.Contains(string(out), "protocol 4") {
			t.Errorf("release 0.1.0 bringing %v to a resharded fleet: %v (context %v), want it to refuse naming protocol 4; its output:\n%s", brings, err, timedOut, tail2(out, 10))
		}
	}
	if _, err := c.Fleet().Configure(t.Context(), first); err != nil {
		t.Errorf("this tree bringing the fleet's first shard set to it after the reshard: %v", err)
	}
}

// tail2 is the last n lines of out.
func tail2(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitReady waits until every shard is owned by one of the fleet's live
// workers, all of them members, balanced within one; its error says how
// far the fleet got.
func waitReady(t *testing.T, obs *procfleet.Observer, within time.Duration) error {
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	var last procfleet.View
	for {
		v, err := obs.View(ctx, last.Index)
		if err != nil {
			return fmt.Errorf("not ready within %v (%v): %d members, %d of %d shards owned, spread %d",
				within, err, len(last.Members), last.OwnedByMembers(), shards, last.Spread())
		}
		if len(v.Members) == workers && v.OwnedByMembers() == shards && v.Spread() <= 1 {
			return nil
		}
		last = v
	}
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// linesWith returns the lines of the log at path that contain any of
// words, each cut to 300 bytes: what a failed roll prints of its workers.
func linesWith(path string, words ...string) []string {
	b, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if slices.ContainsFunc(words, func(w string) bool { return strings.Contains(l, w) }) {
			out = append(out, l[:min(len(l), 300)])
		}
	}
	return out
}
