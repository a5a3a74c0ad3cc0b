// Package rollingrestart is shardbench's rolling-restart scenario: every
// `shardd worker` process of a fleet is restarted in turn, as a deploy does
// (SIGTERM, wait for the exit, a down time, start again with the same --id,
// wait until the fleet is ready again), once with a rejoin grace and once
// without. The figures come from the workers' histories (internal/offsetlog:
// every handler run with its worker, start and end) and from the observer's
// views.
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: a worker comes back under the same ID after each
// stop, and the fleet is ready again before the next worker is restarted;
// the figures are taken from every process's history, across processes, by
// the workers' wall clocks (one machine, one clock).
//
// How it fails: a fleet not ready again within two minutes after a
// restart, or handlers not running on every shard within ten seconds after
// the last, ends the scenario with an error; the variants measured before it
// keep their rows.
package rollingrestart
