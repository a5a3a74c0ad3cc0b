package worker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

func idle(ctx context.Context, _ *worker.Claim) error { <-ctx.Done(); return nil }

// TestStartTimeoutOnAnUnreachableCoordinator: a worker whose coordinator
// never answers says so in its status at once, is not Ready, and with a
// StartTimeout Run returns ErrNotJoined naming what it waited on.
func TestStartTimeoutOnAnUnreachableCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := faults.Wrap(memory.New())
		down.Set(faults.Fail)
		w, err := worker.New(worker.Config{ID: "w1", Fleet: shard.Config{Shards: 4}, Coordinator: down, Offsets: offmem.New(),
			Handler: worker.HandlerFunc(idle), StartTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		began := time.Now()
		go func() { done <- w.Run(t.Context()) }()
		time.Sleep(time.Second)
		if st := w.Status(); st.State != worker.StateJoining || !strings.Contains(st.Waiting, "not reachable") {
			t.Errorf("status after 1 s: state %s, waiting %q", st.State, st.Waiting)
		}
		select {
		case <-w.Ready():
			t.Fatal("ready without a coordinator")
		default:
		}
		err = <-done
		if !errors.Is(err, worker.ErrNotJoined) || !errors.Is(err, shard.ErrUnavailable) || time.Since(began) < 30*time.Second || time.Since(began) > 36*time.Second {
			t.Errorf("Run returned %v after %v, want ErrNotJoined with the cause after about 30 s", err, time.Since(began))
		}
	})
}

// TestDuplicateWorkerIDReportedAtOnce: a second worker started with a live
// worker's ID says within a second, in its status, that another session
// holds its ID and whose; the first, Ready, keeps running.
func TestDuplicateWorkerIDReportedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		coord := memory.New()
		start := func(addr string) (*worker.Worker, chan error) {
			w, err := worker.New(worker.Config{ID: "w1", Address: addr, Fleet: shard.Config{Shards: 4}, Coordinator: coord, Offsets: offmem.New(),
				Handler: worker.HandlerFunc(idle)})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- w.Run(t.Context()) }()
			return w, done
		}
		first, _ := start("host-a:9100")
		<-first.Ready()
		second, _ := start("host-b:9100")
		time.Sleep(time.Second)
		st := second.Status()
		if !strings.Contains(st.Waiting, `worker id "w1" is held by another session`) || !strings.Contains(st.Waiting, "host-a:9100") {
			t.Errorf("the second w1 after 1 s: state %s, waiting %q; want it to name the holder", st.State, st.Waiting)
		}
		if st := first.Status(); st.State != worker.StateActive || st.Waiting != "" {
			t.Errorf("the first w1: state %s, waiting %q", st.State, st.Waiting)
		}
	})
}

// TestSlogReceivesTheWorkersLogs: a program that logs with log/slog hands
// its logger over and gets the worker's lines in its own handler.
func TestSlogReceivesTheWorkersLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		w, err := worker.New(worker.Config{ID: "w1", Fleet: shard.Config{Shards: 4}, Coordinator: memory.New(), Offsets: offmem.New(),
			Handler: worker.HandlerFunc(idle), Slog: slog.New(slog.NewTextHandler(&buf, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		<-w.Ready()
		cancel()
		<-done
		if out := buf.String(); !strings.Contains(out, `msg="joined the fleet"`) || !strings.Contains(out, "worker=w1") {
			t.Errorf("the slog handler got:\n%s", out)
		}
	})
}

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
