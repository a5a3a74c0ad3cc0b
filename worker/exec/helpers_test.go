package exec

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shardlease/shardlease/internal/harness/shardproc"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// output is what the children wrote, shared with the test.
type output = shardproc.Output

// waitUntil polls cond every 10 ms until it holds, or fails the test once
// within has passed: the children are real processes on the real clock.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// supervised is one Supervisor with a one-shard fleet ("s-000"), its
// output and its log; under a worker (runUnderWorker), the worker and its
// coordinator.
type supervised struct {
	*Supervisor
	out   *output
	logs  *observer.ObservedLogs
	w     *worker.Worker
	coord *memory.Coordinator
}

func newSupervised(t *testing.T, grace time.Duration, script string) supervised {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	out := &output{}
	s, err := New(Config{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")}, Prefix: "p",
		Fleet: shard.Config{Shards: 1, Name: "s"}, DrainGrace: grace, Stdout: out, Stderr: out, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	return supervised{Supervisor: s, out: out, logs: logs}
}

// start runs Process for a hand-made claim on s-000 until cancel is called
// with a cause; done yields what Process returned.
func (s supervised) start(t *testing.T) (cancel context.CancelCauseFunc, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	ch, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		ch <- s.Process(ctx, &worker.Claim{Claim: shard.Claim{Shard: "s-000", Token: 9}, Worker: "w"})
	}()
	t.Cleanup(func() {
		cancel(worker.ErrLost)
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Errorf("Process did not return within 10s of its claim's end")
		}
	})
	return cancel, ch
}

// logged counts the log lines with this message.
func (s supervised) logged(msg string) int { return s.logs.FilterMessage(msg).Len() }

// groupMembers is shardproc.GroupMembers, failing the test when /proc
// cannot be read.
func groupMembers(t *testing.T, groups ...int) []string {
	t.Helper()
	found, err := shardproc.GroupMembers(groups...)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// groupEnds fails the test unless the process group is empty within a
// second: its members were sent SIGKILL, which leaves them only their exit.
func groupEnds(t *testing.T, pgid int) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		if left = groupMembers(t, pgid); len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	t.Errorf("processes left in the child's group a second after its end:\n%s", strings.Join(left, "\n"))
}

// pgidOf reads the "pgid=N" a child script printed.
func pgidOf(t *testing.T, out string) int {
	t.Helper()
	_, rest, ok := strings.Cut(out, "pgid=")
	if !ok {
		t.Fatalf("no pgid= in the output:\n%s", out)
	}
	n, err := strconv.Atoi(strings.Fields(rest)[0])
	if err != nil {
		t.Fatalf("pgid in %q: %v", out, err)
	}
	return n
}

func shardClaim(id shard.ID, token shard.Token) shard.Claim {
	return shard.Claim{Shard: id, Token: token}
}
