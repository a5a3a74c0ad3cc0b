package exec

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// runUnderWorker runs a one-shard worker on the embedded coordinator whose
// handler is a Supervisor of script; stop ends the worker's context and
// waits for Run to return. edit, when given, changes the worker's Config.
func runUnderWorker(t *testing.T, drainTimeout, grace time.Duration, script string, edit ...func(*worker.Config)) (s supervised, stop func()) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	out := &output{}
	fleet := shard.Config{Shards: 1, Name: "s"}
	sup, err := New(Config{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")},
		Fleet: fleet, DrainGrace: grace, Stdout: out, Stderr: out, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	coord, store := memory.New(), offmem.New()
	cfg := worker.Config{ID: "w1", Fleet: fleet, Coordinator: coord, Offsets: store, Handler: sup,
		DrainTimeout: drainTimeout, ColdStartGather: worker.NoColdStartGather}
	for _, e := range edit {
		e(&cfg)
	}
	w, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("worker.Run = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the worker did not stop within 30s")
		}
		_ = store.Close()
	}
	t.Cleanup(stop)
	return supervised{Supervisor: sup, out: out, logs: logs, w: w, coord: coord}, stop
}

// TestUnderAWorkerTheDrainTimeoutKillsAStubbornChild: the worker ends a
// revoked claim's authority at its DrainTimeout; a child still draining is
// killed then, however long DrainGrace is, and the shard is released only
// after it is gone.
func TestUnderAWorkerTheDrainTimeoutKillsAStubbornChild(t *testing.T) {
	const drain = 300 * time.Millisecond
	s, stop := runUnderWorker(t, drain, time.Minute, stubbornChild)
	waitUntil(t, 15*time.Second, "the child is up", func() bool { return strings.Contains(s.out.String(), "[s-000] up") })
	pgid := pgidOf(t, s.out.String())
	began := time.Now()
	stop()
	if took := time.Since(began); took < drain || took > 10*time.Second {
		t.Errorf("the worker stopped %v after its context ended; want the %v drain timeout, then SIGKILL", took, drain)
	}
	if s.logged("authority ended while the child drained: SIGKILL sent") != 1 {
		t.Errorf("the log does not say the authority ended: %v", s.logs.All())
	}
	groupEnds(t, pgid)
}

// TestUnderAWorkerAnExitingChildIsRestarted: a child that exits while its
// shard is owned is started again by the worker, with the same claim.
func TestUnderAWorkerAnExitingChildIsRestarted(t *testing.T) {
	s, stop := runUnderWorker(t, time.Second, time.Second, `echo start token=$SHARDLEASE_TOKEN; exit 3`)
	starts := regexp.MustCompile(`(?m)^\[s-000\] start token=(\d+)$`)
	const exited = "child exited while the shard is owned; restarting with backoff"
	// Three exits, each logged once the child is gone: waiting for the
	// third start instead would race its exit against the stop.
	waitUntil(t, 15*time.Second, "three exits", func() bool { return s.logged(exited) >= 3 })
	stop()
	tokens := map[string]bool{}
	started := starts.FindAllStringSubmatch(s.out.String(), -1)
	for _, m := range started {
		tokens[m[1]] = true
	}
	if len(tokens) != 1 || tokens["0"] {
		t.Errorf("restarts got tokens %v, want the one claim's", tokens)
	}
	if n := s.logged(exited); len(started) < n || n < 3 {
		t.Errorf("%d exits logged after %d starts, want at least three, one per start", n, len(started))
	}
}
