package exec

import (
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startGroup starts sleep in a process group of its own and returns its
// pgid; the test reaps it.
func startGroup(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid
}

// groupGone fails the test unless the process group is empty within
// within: groupEnds with a longer wait, for a group whose deadline is
// still ahead, or whose SIGKILLed members a busy machine may be slow to
// schedule for their exit.
func groupGone(t *testing.T, pgid int, within time.Duration) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		if left = groupMembers(t, pgid); len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	t.Errorf("processes left in the group after %v:\n%s", within, strings.Join(left, "\n"))
}

// lockedBuffer is the watchdog's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWatchdogKillsAtTheDeadlineAndAtTheEnd: a group whose time passes is
// killed then and not before, a group renewed in time lives on, a released
// group is never touched, and every group still held is killed when the
// supervisor's end of the pipe closes.
func TestWatchdogKillsAtTheDeadlineAndAtTheEnd(t *testing.T) {
	expiring, renewed, released := startGroup(t), startGroup(t), startGroup(t)
	r, w := io.Pipe()
	var errs lockedBuffer
	done := make(chan struct{})
	go func() { runWatchdog(r, &errs); close(done) }()
	d := &watchdog{in: w, groups: 3}

	// Margins for a busy machine: the deadline is 3 s away, the renewal
	// comes 2 s before it, and the kill is waited for well past it.
	start := time.Now()
	deadline := start.Add(3 * time.Second)
	for _, g := range []int{expiring, renewed, released} {
		if err := d.renew(g, deadline, "stream/shard-0"); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.release(released, "stream/shard-0"); err != nil {
		t.Fatal(err)
	}
	checked := time.Now()
	if left := groupMembers(t, expiring); len(left) == 0 && checked.Before(deadline) {
		t.Fatalf("the group was killed %v before its deadline", deadline.Sub(checked))
	}
	time.Sleep(time.Second)
	if err := d.renew(renewed, time.Now().Add(time.Minute), "stream/shard-1"); err != nil {
		t.Fatal(err)
	}
	groupGone(t, expiring, time.Until(deadline)+5*time.Second)
	if gone := time.Since(start); gone < 3*time.Second {
		t.Errorf("the group died %v after it was given 3s", gone)
	}
	if left := groupMembers(t, renewed, released); len(left) != 2 {
		t.Fatalf("the renewed and the released groups should live: %v", left)
	}
	// The watchdog kills first and says so after: the group may be gone
	// before the line is written.
	waitUntil(t, 5*time.Second, "the watchdog says why it killed the group", func() bool {
		return strings.Contains(errs.String(), "did not renew the claim's deadline")
	})

	_ = w.Close() // the supervisor is gone
	<-done
	groupGone(t, renewed, 5*time.Second)
	if left := groupMembers(t, released); len(left) != 1 {
		t.Errorf("the released group was killed: %v", left)
	}
	if !strings.Contains(errs.String(), "its supervisor is gone") {
		t.Errorf("the watchdog did not say why it killed the group at the end: %q", errs.String())
	}
}
