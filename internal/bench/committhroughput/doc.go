// Package committhroughput is shardbench's commit-throughput scenario: per
// offsets backend, the fenced commit against the same write without the
// check (fencecost's pairs, the ones the FenceCost go-test benchmarks run),
// one at a time and in batches of 64 where the backend has a batch API. Each
// trial runs each pair for a window; the row is fenced ÷ unfenced throughput
// over the trials.
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: the fenced and unfenced writes of a pair alternate in
// one window (offsets/offsetstest/fencecost), so the machine's noise falls
// on both; a backend that cannot be opened (no PostgreSQL) is a row saying
// why, not the end of the run.
//
// How it fails: a write that fails during a window ends the scenario with
// the error; the rows of the backends measured before it are kept.
package committhroughput
