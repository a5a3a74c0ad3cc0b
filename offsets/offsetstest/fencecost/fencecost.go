// Package fencecost measures what the fencing token check costs a commit:
// each backend's fenced commit against the same write made without the
// check, through the same store, connection pool and server. The go-test
// benchmarks (BenchmarkFenceCost in this package, offsets/consul and
// offsets/postgres) and shardbench's commit-throughput scenario run the
// same pairs through the same timing, so their figures compare.
//
// A shared, noisy machine drifts by more than the effect being measured
// when A is timed and then B; so every iteration makes one fenced and one
// unfenced write, alternating which goes first, and times each: the drift
// falls on both sides alike (docs/benchmarks.md, "Fenced offsets").
//
// The unfenced write is what a store without fencing would send: see each
// constructor. Nothing here checks a figure; the callers report them.
package fencecost

import (
	"context"
	"fmt"
	"time"
)

// BatchSize is the entries per batch in the batched pairs, the same for
// every backend so their rows compare.
const BatchSize = 64

// Pair is one paired measurement. Fenced and Unfenced each make one write
// (PerOp commits) with offset i.
type Pair struct {
	Name     string // "commit", "batch64", "commit-vs-txn-set"
	PerOp    int
	Fenced   func(ctx context.Context, i int64) error
	Unfenced func(ctx context.Context, i int64) error
}

// Timing accumulates a Pair's iterations. The zero value is ready.
type Timing struct {
	Iterations         int64
	PerOp              int
	Fenced, Unfenced   time.Duration // time spent in each side's writes
	FencedN, UnfencedN int64         // writes made on each side
}

// Step runs iteration i: both writes, the fenced one first when i is even,
// each timed. An error names the side that failed.
func (t *Timing) Step(ctx context.Context, p Pair, i int64) error {
	t.PerOp = max(p.PerOp, 1)
	timed := func(side string, f func(context.Context, int64) error, into *time.Duration, n *int64) error {
		start := time.Now()
		if err := f(ctx, i); err != nil {
			return fmt.Errorf("fencecost: %s %s write %d: %w", p.Name, side, i, err)
		}
		*into += time.Since(start)
		*n++
		return nil
	}
	first, second := func() error { return timed("fenced", p.Fenced, &t.Fenced, &t.FencedN) },
		func() error { return timed("unfenced", p.Unfenced, &t.Unfenced, &t.UnfencedN) }
	if i%2 != 0 {
		first, second = second, first
	}
	if err := first(); err != nil {
		return err
	}
	if err := second(); err != nil {
		return err
	}
	t.Iterations++
	return nil
}

// FencedRate is fenced commits per second of fenced write time.
func (t Timing) FencedRate() float64 { return rate(t.FencedN, t.PerOp, t.Fenced) }

// UnfencedRate is unfenced commits per second of unfenced write time.
func (t Timing) UnfencedRate() float64 { return rate(t.UnfencedN, t.PerOp, t.Unfenced) }

// Ratio is FencedRate ÷ UnfencedRate: 1 means the check is free.
func (t Timing) Ratio() float64 { return t.FencedRate() / t.UnfencedRate() }

// CostPercent is the fence's cost: (fenced time − unfenced time) ÷
// unfenced time, in percent, per write.
func (t Timing) CostPercent() float64 {
	f := t.Fenced.Seconds() / float64(max(t.FencedN, 1))
	u := t.Unfenced.Seconds() / float64(max(t.UnfencedN, 1))
	return 100 * (f - u) / u
}

func rate(n int64, perOp int, d time.Duration) float64 {
	return float64(n) * float64(perOp) / d.Seconds()
}

// Measure steps p until window has passed (at least two iterations, one in
// each order).
func Measure(ctx context.Context, p Pair, window time.Duration) (Timing, error) {
	var t Timing
	start := time.Now()
	for i := int64(0); i < 2 || time.Since(start) < window; i++ {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		if err := t.Step(ctx, p, i); err != nil {
			return t, err
		}
	}
	return t, nil
}

// B is what Bench needs of a *testing.B (kept as an interface so that this
// package, which a program uses, does not import testing).
type B interface {
	Loop() bool
	Fatal(args ...any)
	ReportMetric(n float64, unit string)
}

// Bench runs p as a go-test benchmark and reports fenced-commits/s,
// unfenced-commits/s and fence-%.
func Bench(b B, p Pair) {
	var t Timing
	ctx := context.Background()
	for i := int64(0); b.Loop(); i++ {
		if err := t.Step(ctx, p, i); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(t.FencedRate(), "fenced-commits/s")
	b.ReportMetric(t.UnfencedRate(), "unfenced-commits/s")
	b.ReportMetric(t.CostPercent(), "fence-%")
}
