package fencecost_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/offsets/offsetstest/fencecost"
)

// BenchmarkFenceCost measures what the token check costs the two
// in-process backends, memory and bolt, against the same write without the
// check. (Consul's and PostgreSQL's are in their own packages, where their
// servers are at hand; all four are in docs/benchmarks.md and in
// shardbench's commit-throughput scenario.)
//
//	go test -run '^$' -bench FenceCost -count 5 ./offsets/offsetstest/fencecost
//
// Neither backend has a batch API, so there is no batched row.
func BenchmarkFenceCost(b *testing.B) {
	b.Run("memory/commit", func(b *testing.B) {
		p, closeStore := fencecost.Memory()
		defer closeStore()
		fencecost.Bench(b, p)
	})
	b.Run("bolt/commit", func(b *testing.B) {
		p, closeStore, err := fencecost.Bolt(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer closeStore()
		fencecost.Bench(b, p)
	})
}

// TestTimingAlternatesAndCounts checks the timing core: both sides run
// once per step, in alternating order, and the rates count PerOp commits
// per write.
func TestTimingAlternatesAndCounts(t *testing.T) {
	var order []string
	p := fencecost.Pair{
		Name: "fake", PerOp: 4,
		Fenced: func(context.Context, int64) error {
			order = append(order, "f")
			time.Sleep(time.Millisecond)
			return nil
		},
		Unfenced: func(context.Context, int64) error {
			order = append(order, "u")
			time.Sleep(time.Millisecond)
			return nil
		},
	}
	var tm fencecost.Timing
	for i := range int64(4) {
		if err := tm.Step(t.Context(), p, i); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(order, ""); got != "fuuffuuf" {
		t.Errorf("order %q, want fuuffuuf (fenced first on even iterations)", got)
	}
	if tm.Iterations != 4 || tm.FencedN != 4 || tm.UnfencedN != 4 {
		t.Errorf("counts %+v, want 4 of each", tm)
	}
	// 4 writes of 4 commits in at least 4 ms: at most 4000 commits/s.
	if r := tm.FencedRate(); r <= 0 || r > 4000 {
		t.Errorf("fenced rate %.0f/s, want in (0, 4000]", r)
	}
}

// A failing side stops the step and is named in the error.
func TestTimingNamesTheFailingSide(t *testing.T) {
	p := fencecost.Pair{
		Name: "fake", PerOp: 1,
		Fenced:   func(context.Context, int64) error { return nil },
		Unfenced: func(context.Context, int64) error { return context.DeadlineExceeded },
	}
	_, err := fencecost.Measure(t.Context(), p, 0)
	if err == nil || err.Error() != "fencecost: fake unfenced write 0: context deadline exceeded" {
		t.Fatalf("err = %v", err)
	}
}
