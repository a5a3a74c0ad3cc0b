package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// TestStatefulStreamMovesWarm: `shardd worker --restore 5s`'s handler
// restores for 5 s when it starts cold (the first placement), and a shard
// moved to a worker that joins later starts without restoring, within a
// second of its previous handler's stop: the standby restored ahead.
func TestStatefulStreamMovesWarm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		coord, store := memory.New(), offmem.New()
		core, logs := observer.New(zapcore.InfoLevel)
		start := func(id string) {
			h := statefulStream{restoringStream{stream: stream{rate: 10, commitEvery: time.Second, log: zap.New(core).With(zap.String("w", id))}, restore: 5 * time.Second}}
			w, err := worker.New(worker.Config{ID: id, Fleet: shard.Config{Shards: 4}, Coordinator: coord, Offsets: store, Handler: h,
				Policy: shard.LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second, LockDelay: 5 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = w.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
		}
		start("a")
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n := logs.FilterMessage("restoring state").Len(); n != 4 {
			t.Fatalf("%d cold restores on the first placement, want 4", n)
		}
		start("b")
		time.Sleep(40 * time.Second)
		synctest.Wait()
		stopped := map[string]time.Time{}
		for _, e := range logs.FilterMessage("handler stopped").All() {
			stopped[e.ContextMap()["shard"].(string)] = e.Time
		}
		moved := 0
		for _, e := range logs.FilterMessage("handler started").All() {
			m := e.ContextMap()
			if m["w"] != "b" {
				continue
			}
			moved++
			if gap := e.Time.Sub(stopped[m["shard"].(string)]); gap > time.Second {
				t.Errorf("%s started on b %v after it stopped on a, want a warm start (under 1 s, against a 5 s restore)", m["shard"], gap)
			}
		}
		if n := logs.FilterMessage("restoring state").Len(); moved != 2 || n != 4 {
			t.Fatalf("b started %d shards, %d restores in all; want 2 moved warm and only the first 4 restores", moved, n)
		}
	})
}

// TestStandbyFlag: --restore gives a handler with a standby side, and
// --standby=false the same restore without one; --standby=false alone is
// refused, since a stateless stream has none to turn off.
func TestStandbyFlag(t *testing.T) {
	base := []string{"--prefix", "p", "--shards", "4", "--offsets", "memory", "--allow-local-offsets"}
	for _, tc := range []struct {
		args    []string
		standby bool
	}{
		{[]string{"--restore", "5s"}, true},
		{[]string{"--restore", "5s", "--standby=false"}, false},
		{nil, false},
	} {
		f, _, ok := parseWorkerFlags(append(base, tc.args...), io.Discard)
		if !ok {
			t.Fatalf("%v: refused", tc.args)
		}
		h, err := f.member().newHandler(offmem.New(), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		if _, standby := h.(worker.Standby); standby != tc.standby {
			t.Errorf("%v: a standby side %v, want %v", tc.args, standby, tc.standby)
		}
	}
	var stderr strings.Builder
	if _, _, ok := parseWorkerFlags(append(base, "--standby=false"), &stderr); ok || !strings.Contains(stderr.String(), "pass --restore D too") {
		t.Errorf("--standby=false without --restore: accepted or unclear: %q", stderr.String())
	}
}
