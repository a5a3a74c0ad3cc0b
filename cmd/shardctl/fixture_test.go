package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a fleet of real workers on the embedded coordinator, run
// inside a synctest bubble: shardctl talks to it exactly as to Consul.
type fixture struct {
	t       *testing.T
	coord   *memory.Coordinator
	store   *offmem.Store // every worker's offsets, as a shared store would be
	shards  shard.Config
	zones   map[string]string            // worker → zone, for the workers started in one
	labels  map[string]map[string]string // worker → labels
	mu      sync.Mutex
	running map[string]context.CancelFunc
	done    map[string]chan error
}

// fixturePolicy is Consul's shape of policy: 10 s TTL, renew every 2 s.
var fixturePolicy = shard.LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second}

// newFixture starts workers over n shards and lets them settle. Dead
// member keys are kept for an hour, so a stopped worker shows as dead.
func newFixture(t *testing.T, n int, ids ...string) *fixture {
	f := &fixture{t: t, coord: memory.New(memory.WithMemberGrace(time.Hour)), store: offmem.New(), shards: shard.Config{Shards: n},
		running: map[string]context.CancelFunc{}, done: map[string]chan error{}}
	for _, id := range ids {
		f.start(id)
	}
	settle(30 * time.Second)
	return f
}

func (f *fixture) start(id string) {
	f.t.Helper()
	w, err := worker.New(worker.Config{
		ID: id, Version: "v1.4.2", Address: id + ".example:9100", Zone: f.zones[id], Labels: f.labels[id], Fleet: f.shards, Coordinator: f.coord,
		Offsets: f.store, Policy: fixturePolicy, JitterSeed: uint64(len(id)*7919 + int(id[len(id)-1])),
		Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			<-ctx.Done()
			return nil
		}),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	f.mu.Lock()
	f.running[id], f.done[id] = cancel, done
	f.mu.Unlock()
	f.t.Cleanup(func() { f.stop(id) })
}

// stop shuts a worker down gracefully: it releases everything, and its
// member key stays, dead.
func (f *fixture) stop(id string) {
	f.mu.Lock()
	cancel, done := f.running[id], f.done[id]
	delete(f.running, id)
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (f *fixture) snapshot() shard.Snapshot {
	s, err := f.coord.Fleet().Watch(context.Background(), 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// owners maps each held shard to its live holder's ID.
func (f *fixture) owners() map[shard.ID]string {
	s := f.snapshot()
	by := map[shard.SessionID]string{}
	for _, m := range s.Members {
		if m.Live() {
			by[m.Session] = m.ID
		}
	}
	out := map[shard.ID]string{}
	for _, st := range s.Shards {
		if id, ok := by[st.Session]; ok && st.Held() {
			out[st.Shard] = id
		}
	}
	return out
}

// run runs shardctl against the fixture's coordinator (fleet "orders").
func (f *fixture) run(ctx context.Context, stdin string, args ...string) (int, string, string) {
	a, out, errOut := newApp(stdin)
	a.connect = func(c connFlags) (*fleetConn, error) {
		if c.consul.Prefix == "" {
			return nil, usagef("-prefix is required")
		}
		fc := &fleetConn{coord: f.coord, keys: f.coord, name: c.consul.Prefix, addr: "the embedded coordinator"}
		if c.offsets != "" {
			fc.offsets = f.store
		}
		return fc, nil
	}
	code := a.run(ctx, args)
	return code, out.String(), errOut.String()
}

// newApp is an app with buffers for its streams and no environment.
func newApp(stdin string) (*app, *syncBuffer, *syncBuffer) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	return &app{stdin: strings.NewReader(stdin), stdout: out, stderr: errOut,
		getenv: func(string) string { return "" }, now: time.Now}, out, errOut
}

// syncBuffer is a bytes.Buffer safe for a command running in a goroutine.
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

// wantOneLineError checks the shape every failure must have: exit 1 (or
// want), nothing on stdout that looks like a trace, exactly one line on
// stderr containing each of subs.
func wantOneLineError(t *testing.T, code int, stdout, stderr string, wantCode int, subs ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("exit %d, want %d; stderr %q", code, wantCode, stderr)
	}
	if lines := strings.Count(strings.TrimRight(stderr, "\n"), "\n") + 1; stderr == "" || lines != 1 {
		t.Errorf("stderr has %d lines, want one:\n%s", lines, stderr)
	}
	for _, bad := range []string{"goroutine ", "panic", ".go:"} {
		if strings.Contains(stderr+stdout, bad) {
			t.Errorf("output contains %q (a stack trace?):\n%s%s", bad, stdout, stderr)
		}
	}
	for _, s := range subs {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr %q does not contain %q", stderr, s)
		}
	}
}
