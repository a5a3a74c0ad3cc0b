// Package benchtest holds what the tests of shardbench (cmd/shardbench and
// internal/bench) share: SampleReport, a small synthetic run, and
// StrayNumbers, the check that every number in a generated section of
// docs/benchmarks.md is a figure of the run it was rendered from, so that a
// hand edit or a figure from another run is caught.
//
// What it guarantees: StrayNumbers accepts every number DocSection prints
// from its run (a figure rounded as printed, scaled by a unit prefix, a
// percentage or minutes, or written in one of the run's texts), and names
// every other.
//
// How it fails: it returns what it found; it never fails a test itself. It
// is test infrastructure: no shipped binary links it.
package benchtest
