package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
)

// TestRunBinarySupervisorStoppedOrKilled: two shardd run processes share 8
// shards on a real Consul; the supervisor of one (its process alone, not
// its children) is stopped with SIGSTOP, or killed with SIGKILL. Its
// children must be gone before the other supervisor's children for the
// same shards start: for a stopped supervisor its watchdog kills them at
// the lease's local deadline, for a killed one Pdeathsig and the watchdog
// do at once. Polled every 10 ms against the other children's own start
// times: a child of the stopped supervisor seen alive at or after the
// moment the new owner's child started is two processes on one shard.
func TestRunBinarySupervisorStoppedOrKilled(t *testing.T) {
	agent := consultest.StartDev(t)
	bin := sharddBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			prefix := fmt.Sprintf("shardlease-test/stall-%d", time.Now().UnixNano())
			script := `echo up $SHARDLEASE_SHARD pgid=$$ at=$(date +%s%N); while :; do sleep 0.1; done`
			start := func(id string) (*exec.Cmd, *runOutput) {
				out := &runOutput{}
				cmd := exec.Command(bin, "run", "--consul", agent.HTTPAddr, "--consul-token", "", "--prefix", prefix, "--shards", "8", "--id", id,
					"--ttl", "3s", "--renew", "500ms", "--pause-budget", "1s", "--lock-delay", "2s", "--drain-timeout", "2s", "--log-level", "warn",
					"--", "sh", "-c", script)
				cmd.Stdout, cmd.Stderr = out, out
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go func() { _ = cmd.Wait() }()
				t.Cleanup(func() {
					_ = cmd.Process.Signal(syscall.SIGCONT)
					_ = cmd.Process.Signal(syscall.SIGTERM)
					time.Sleep(100 * time.Millisecond)
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				})
				return cmd, out
			}
			up := regexp.MustCompile(`^\[\S+\] up (\S+) pgid=(\d+) at=(\d+)$`)
			type child struct {
				pgid int
				at   int64 // its own wall clock at start, ns
			}
			// latest is each shard's newest child in out.
			latest := func(out *runOutput) map[string]child {
				m := map[string]child{}
				for _, l := range out.matches(up) {
					pgid, _ := strconv.Atoi(l[2])
					at, _ := strconv.ParseInt(l[3], 10, 64)
					m[l[1]] = child{pgid, at}
				}
				return m
			}
			alive := func(c child) bool { return len(groupMembers(t, map[int]bool{c.pgid: true})) > 0 }

			a, outA := start("a")
			waitUntil(t, 30*time.Second, "a runs all 8 shards", func() bool { return len(latest(outA)) == 8 })
			_, outB := start("b")
			var mine map[string]child // a's running children once b took its half
			waitUntil(t, 30*time.Second, "a and b run 4 shards each", func() bool {
				mine = map[string]child{}
				for s, c := range latest(outA) {
					if alive(c) {
						mine[s] = c
					}
				}
				return len(mine) == 4 && len(latest(outB)) == 4
			})

			stopped := time.Now()
			if err := a.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			lastAlive := map[string]int64{} // shard → last poll that saw a's child alive, ns
			var diedAfter time.Duration
			for deadline := stopped.Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				now := time.Now()
				anyAlive := false
				for s, c := range mine {
					if alive(c) {
						lastAlive[s], anyAlive = now.UnixNano(), true
					}
				}
				if !anyAlive && diedAfter == 0 {
					diedAfter = now.Sub(stopped)
				}
				if taken := latest(outB); len(taken) == 8 {
					break
				}
				if now.After(deadline) {
					t.Fatalf("b does not run all 8 shards 30 s after a's supervisor got %v:\n%s", sig, outB.String())
				}
			}
			tookOver := time.Since(stopped)
			final := time.Now().UnixNano() // after every start b reported: a child alive now overlapped
			for s, c := range mine {
				if alive(c) {
					lastAlive[s] = final
				}
			}
			for s := range mine {
				if b := latest(outB)[s]; lastAlive[s] >= b.at {
					t.Errorf("%s: a's child (group %d) was alive %v after b's child started", s, mine[s].pgid, time.Duration(lastAlive[s]-b.at))
				}
			}
			if diedAfter == 0 {
				t.Fatalf("a's children still ran %v after its supervisor got %v, when b ran every shard", tookOver.Round(time.Millisecond), sig)
			}
			t.Logf("%v: a's children gone %v after it, b ran every shard %v after it", sig, diedAfter.Round(time.Millisecond), tookOver.Round(time.Millisecond))
			if diedAfter > 3*time.Second {
				t.Errorf("a's children outlived its lease's deadline: gone %v after its supervisor got %v (TTL 3 s)", diedAfter, sig)
			}
		})
	}
}
