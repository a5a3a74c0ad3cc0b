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

	start := time.Now()
	deadline := start.Add(time.Second)
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
	time.Sleep(500 * time.Millisecond)
	if err := d.renew(renewed, time.Now().Add(time.Minute), "stream/shard-1"); err != nil {
		t.Fatal(err)
	}
	groupEnds(t, expiring) // within a second of... now; check when below
	if time.Since(start) < time.Second {
		t.Errorf("the group died %v after it was given a second", time.Since(start))
	}
	if left := groupMembers(t, renewed, released); len(left) != 2 {
		t.Fatalf("the renewed and the released groups should live: %v", left)
	}
	if !strings.Contains(errs.String(), "did not renew the claim's deadline") {
		t.Errorf("the watchdog did not say why it killed the group: %q", errs.String())
	}

	_ = w.Close() // the supervisor is gone
	<-done
	groupEnds(t, renewed)
	if left := groupMembers(t, released); len(left) != 1 {
		t.Errorf("the released group was killed: %v", left)
	}
	if !strings.Contains(errs.String(), "its supervisor is gone") {
		t.Errorf("the watchdog did not say why it killed the group at the end: %q", errs.String())
	}
}
