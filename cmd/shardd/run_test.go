package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/internal/harness/shardproc"
)

// runOutput is what the supervisor wrote, shared with the test.
type runOutput struct{ shardproc.Output }

func (o *runOutput) matches(re *regexp.Regexp) [][]string {
	var all [][]string
	for _, l := range strings.Split(o.String(), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			all = append(all, m)
		}
	}
	return all
}

// waitUntil polls cond every 20 ms until it holds or within passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers is shardproc.GroupMembers of the groups in the set,
// failing the test when /proc cannot be read.
func groupMembers(t *testing.T, groups map[int]bool) []string {
	t.Helper()
	found, err := shardproc.GroupMembers(slices.Collect(maps.Keys(groups))...)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// groupsLeft is groupMembers polled for up to five seconds until the
// groups are empty: the supervisor waits for its child, the group's
// leader, then sends SIGKILL to the rest of the group without waiting for
// them, so right after the stop a process killed may not have been
// scheduled to die yet. What is still there after five seconds was left
// behind.
func groupsLeft(t *testing.T, groups map[int]bool) []string {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if left = groupMembers(t, groups); len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// startRun runs `shardd run args…` in-process until the returned stop is
// called; stop returns the exit code and how long the stop took.
func startRun(t *testing.T, args ...string) (out, errs *runOutput, stop func() (int, time.Duration)) {
	t.Helper()
	out, errs = &runOutput{}, &runOutput{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- runCmd(ctx, args, out, errs) }()
	stopped := false
	var result int
	var took time.Duration
	stop = func() (int, time.Duration) {
		if stopped {
			return result, took
		}
		stopped = true
		began := time.Now()
		cancel()
		select {
		case result = <-code:
		case <-time.After(60 * time.Second):
			t.Fatalf("shardd run did not stop within 60s; stderr:\n%s", errs.String())
		}
		took = time.Since(began)
		return result, took
	}
	t.Cleanup(func() { stop() })
	return out, errs, stop
}

var childLine = regexp.MustCompile(`^\[(\S+)\] shard=(\S+) index=(\d+) of=(\d+) token=(\d+) worker=(\S+) pgid=(\d+)$`)

const childScript = `echo shard=$SHARDLEASE_SHARD index=$SHARDLEASE_SHARD_INDEX of=$SHARDLEASE_SHARDS token=$SHARDLEASE_TOKEN worker=$SHARDLEASE_WORKER pgid=$$; sleep 30`

// The issue's own check: eight children with their own shards, each with
// its claim in its environment, stopped cleanly when shardd stops, with no
// process of theirs left behind.
func TestRunEightChildrenAndACleanStop(t *testing.T) {
	out, errs, stop := startRun(t, "--shards", "8", "--id", "w1", "--log-level", "warn", "--", "sh", "-c", childScript)
	waitUntil(t, 15*time.Second, "eight children report", func() bool { return len(out.matches(childLine)) == 8 })
	shards, groups := map[string]bool{}, map[int]bool{}
	for _, m := range out.matches(childLine) {
		prefix, sh, index, of, token, w, pgid := m[1], m[2], m[3], m[4], m[5], m[6], m[7]
		if prefix != sh || of != "8" || w != "w1" || token == "0" {
			t.Errorf("child line %q: want its shard as prefix, 8 shards, worker w1, a token", m[0])
		}
		if want := fmt.Sprintf("stream/shard-%03s", index); sh != want {
			t.Errorf("shard %s has index %s", sh, index)
		}
		shards[sh] = true
		p, _ := strconv.Atoi(pgid)
		groups[p] = true
	}
	if len(shards) != 8 || len(groups) != 8 {
		t.Fatalf("children: %d distinct shards, %d distinct process groups; want 8 and 8\n%s", len(shards), len(groups), out.String())
	}
	if live := groupMembers(t, groups); len(live) < 8 {
		t.Fatalf("only %d processes in the children's groups before the stop:\n%s", len(live), strings.Join(live, "\n"))
	}
	code, took := stop()
	if code != exitOK {
		t.Errorf("exit %d; stderr:\n%s", code, errs.String())
	}
	if took > 5*time.Second {
		t.Errorf("stopping took %v: sleep dies on SIGTERM, so it should be prompt", took)
	}
	if left := groupsLeft(t, groups); len(left) > 0 {
		t.Errorf("processes left after the stop:\n%s", strings.Join(left, "\n"))
	}
}

// A child that ignores SIGTERM is killed when the drain timeout passes: the
// claim's authority ends then, and the supervisor kills at once.
func TestRunKillsAChildThatIgnoresSIGTERMAfterTheDrain(t *testing.T) {
	out, errs, stop := startRun(t, "--shards", "2", "--drain-timeout", "1s", "--log-level", "info", "--",
		"sh", "-c", `trap '' TERM; echo up; while :; do sleep 0.1; done`)
	// Wait for each child's "up", which it prints after its trap: "child
	// started" is logged once the process runs, and a SIGTERM before sh
	// has set the trap would kill it at once, with no drain to time out.
	up := regexp.MustCompile(`^\[\S+\] up$`)
	waitUntil(t, 15*time.Second, "two children past their trap", func() bool { return len(out.matches(up)) == 2 })
	code, took := stop()
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
	if took < time.Second || took > 6*time.Second {
		t.Errorf("stop took %v; want the 1s drain timeout, then SIGKILL", took)
	}
	// The worker ends the claims' authority and the supervisor's own grace
	// passes at about the same moment: either may send the SIGKILL.
	if n := strings.Count(errs.String(), "authority ended while the child drained: SIGKILL sent") +
		strings.Count(errs.String(), "drain grace passed: SIGKILL sent"); n != 2 {
		t.Errorf("%d SIGKILLs after the drain logged, want 2:\n%s", n, errs.String())
	}
}

// A child that exits while its shard is owned is started again, with the
// same claim, after a growing pause.
func TestRunRestartsAChildThatExits(t *testing.T) {
	out, errs, stop := startRun(t, "--shards", "1", "--log-level", "info", "--", "sh", "-c", `echo start token=$SHARDLEASE_TOKEN; exit 3`)
	starts := regexp.MustCompile(`^\[stream/shard-000\] start token=(\d+)$`)
	waitUntil(t, 15*time.Second, "four starts", func() bool { return len(out.matches(starts)) >= 4 })
	stop()
	tokens := map[string]bool{}
	for _, m := range out.matches(starts) {
		tokens[m[1]] = true
	}
	if len(tokens) != 1 {
		t.Errorf("restarts got tokens %v, want the one claim's", tokens)
	}
	if !strings.Contains(errs.String(), "child exited while the shard is owned; restarting with backoff") ||
		!strings.Contains(errs.String(), "exit status 3") {
		t.Errorf("the log does not say why and how the child restarts:\n%s", errs.String())
	}
}

func TestRunBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shards", "8"}, "no command"},
		{[]string{"--", "true"}, "--shards is required"},
		{[]string{"--shards", "8", "--consul", "127.0.0.1:1", "--", "true"}, "--prefix is required with --consul"},
		{[]string{"--shards", "8", "--", "no-such-command-anywhere"}, `command "no-such-command-anywhere"`},
		{[]string{"--shards", "8", "--ttl", "1s", "--renew", "1s", "--", "true"}, "exceeds ttl 1s"},
		{[]string{"--shards", "8", "--drain-timeout", "-1s", "--", "true"}, "drain timeout -1s must not be negative"},
		{[]string{"--shards", "8", "--prefix", "/p", "--", "true"}, `--prefix "/p" must not start or end with '/'`},
		{[]string{"--shards", "8", "--lock-delay", "none", "--", "true"}, "there is no lock-delay of none"},
		{[]string{"--shards", "8", "--lock-delay", "1s", "--", "true"}, "lock-delay 1s is shorter than the step-down deadline ttl 5s − pause 2.5s = 2.5s"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"run"}, tc.args...), &out, &errb); code != exitBadInvoke || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("shardd run %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// Two supervisors on one Consul share the shards: each runs children for
// its half; when one stops, the other takes its shards over.
func TestRunOnConsulSharesTheShards(t *testing.T) {
	agent := consultest.StartDev(t)
	runSharesTheShards(t, "--consul", agent.HTTPAddr, "--consul-token", "")
}

// The same on etcd.
func TestRunOnEtcdSharesTheShards(t *testing.T) {
	cluster := etcdtest.Start(t)
	runSharesTheShards(t, "--etcd", strings.Join(cluster.Endpoints(), ","))
}

// runSharesTheShards runs two `shardd run` members on the coordinator
// where names, one after the other, and stops them.
func runSharesTheShards(t *testing.T, where ...string) {
	prefix := fmt.Sprintf("shardlease-test/run-%d", time.Now().UnixNano())
	// The trap before the "up": a child stopped right after it said up must
	// say down, or it would count as running for good.
	script := `trap 'echo down $SHARDLEASE_SHARD; exit 0' TERM; echo up $SHARDLEASE_SHARD; while :; do sleep 0.1; done`
	args := func(id string) []string {
		return append(slices.Clone(where), "--prefix", prefix, "--shards", "4", "--id", id,
			"--ttl", "3s", "--renew", "500ms", "--pause-budget", "1s", "--drain-timeout", "2s", "--log-level", "warn",
			"--", "sh", "-c", script)
	}
	up := regexp.MustCompile(`^\[(\S+)\] up (\S+)$`)
	down := regexp.MustCompile(`^\[(\S+)\] down (\S+)$`)
	running := func(o *runOutput) map[string]bool {
		n := map[string]int{}
		for _, m := range o.matches(up) {
			n[m[2]]++
		}
		for _, m := range o.matches(down) {
			n[m[2]]--
		}
		live := map[string]bool{}
		for s, c := range n {
			if c > 0 {
				live[s] = true
			}
		}
		return live
	}
	outA, errsA, stopA := startRun(t, args("a")...)
	waitUntil(t, 30*time.Second, "a runs all 4 shards", func() bool { return len(running(outA)) == 4 })
	outB, errsB, stopB := startRun(t, args("b")...)
	waitUntil(t, 30*time.Second, "a and b run 2 shards each", func() bool {
		a, b := running(outA), running(outB)
		if len(a) != 2 || len(b) != 2 {
			return false
		}
		for s := range a {
			if b[s] {
				return false
			}
		}
		return true
	})
	if code, _ := stopB(); code != exitOK {
		t.Errorf("b exit %d:\n%s", code, errsB.String())
	}
	waitUntil(t, 30*time.Second, "a runs all 4 shards again", func() bool { return len(running(outA)) == 4 })
	if code, _ := stopA(); code != exitOK {
		t.Errorf("a exit %d:\n%s", code, errsA.String())
	}
	if len(running(outA)) != 0 || len(running(outB)) != 0 {
		t.Errorf("children still up after both stopped: a %v, b %v", running(outA), running(outB))
	}
}

// The real binary, as a user runs it: the first SIGINT starts the drain;
// children that ignore SIGTERM would hold shardd for the whole drain
// timeout, so a second SIGINT kills them at once; nothing is left behind.
func TestRunBinarySecondSignalKillsTheChildrenAtOnce(t *testing.T) {
	cmd, out, exited, groups := startRunBinary(t, 3, "--shards", "3", "--drain-timeout", "60s", "--log-level", "warn", "--",
		"sh", "-c", `trap '' TERM; echo pgid=$$; while :; do sleep 0.1; done`)

	// Ctrl-C on a terminal signals the foreground process group: shardd's.
	// The children are in their own groups and do not see it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-exited:
		t.Fatalf("shardd exited on the first SIGINT (%v) although its children ignore SIGTERM and the drain is 60s:\n%s", err, out.String())
	case <-time.After(time.Second):
	}
	if left := groupMembers(t, groups); len(left) == 0 {
		t.Fatalf("the children died on the first SIGINT; they ignore SIGTERM")
	}
	began := time.Now()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Errorf("shardd: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("shardd still running 10s after the second SIGINT:\n%s", out.String())
	}
	t.Logf("stopped %v after the second SIGINT", time.Since(began).Round(time.Millisecond))
	if left := groupsLeft(t, groups); len(left) > 0 {
		t.Errorf("processes left:\n%s", strings.Join(left, "\n"))
	}
	if !strings.Contains(out.String(), "second signal: every child killed at once") {
		t.Errorf("shardd did not say why it killed its children:\n%s", out.String())
	}
}

// A hangup (the terminal went away) stops the children in order, as SIGTERM
// does, instead of killing shardd and leaving their own children behind.
func TestRunBinaryHangupStopsTheChildren(t *testing.T) {
	cmd, out, exited, groups := startRunBinary(t, 2, "--shards", "2", "--log-level", "warn", "--", "sh", "-c", `echo pgid=$$; sleep 30`)
	_ = cmd.Process.Signal(syscall.SIGHUP)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("shardd after SIGHUP: %v, want a clean exit\n%s", err, out.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("shardd still running 15s after SIGHUP:\n%s", out.String())
	}
	if left := groupsLeft(t, groups); len(left) > 0 {
		t.Errorf("processes left after SIGHUP:\n%s", strings.Join(left, "\n"))
	}
}

// The real binary with --drain-before-stop and nowhere to move its shards
// (it is the only member): the first SIGINT starts the drain, which waits;
// a second SIGINT cuts it short, and shardd stops at once, children and
// all.
func TestRunBinarySecondSignalEndsTheDrainBeforeStop(t *testing.T) {
	cmd, out, exited, groups := startRunBinary(t, 2, "--shards", "2", "--drain-before-stop", "1h", "--log-level", "warn", "--",
		"sh", "-c", `echo pgid=$$; while :; do sleep 0.1; done`)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-exited:
		t.Fatalf("shardd exited on the first SIGINT (%v) although its drain had nowhere to move the shards:\n%s", err, out.String())
	case <-time.After(2 * time.Second):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Errorf("shardd: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("shardd still running 10s after the second SIGINT:\n%s", out.String())
	}
	if left := groupsLeft(t, groups); len(left) > 0 {
		t.Errorf("processes left:\n%s", strings.Join(left, "\n"))
	}
	if !strings.Contains(out.String(), "the drain before the stop cut short") {
		t.Errorf("shardd did not say why it stopped at once:\n%s", out.String())
	}
}

// startRunBinary starts the real `shardd run` with args in a process group
// of its own (killed on cleanup), waits until children children have said
// their process group (each prints "pgid=N"), and returns the command, its
// output, a channel of its exit, and the children's groups.
func startRunBinary(t *testing.T, children int, args ...string) (*exec.Cmd, *runOutput, <-chan error, map[int]bool) {
	t.Helper()
	out := &runOutput{}
	cmd := exec.Command(sharddBinary(t), append([]string{"run"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	pgid := regexp.MustCompile(`^\[\S+\] pgid=(\d+)$`)
	waitUntil(t, 15*time.Second, fmt.Sprintf("%d children start", children), func() bool { return len(out.matches(pgid)) == children })
	groups := map[int]bool{}
	for _, m := range out.matches(pgid) {
		p, _ := strconv.Atoi(m[1])
		groups[p] = true
	}
	return cmd, out, exited, groups
}
