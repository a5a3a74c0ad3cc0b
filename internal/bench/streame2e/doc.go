// Package streame2e is shardbench's stream-e2e scenario:
// examples/jetstream's pipeline (a real nats-server process → an ordered
// consumer per owned partition → each batch's effects and offset in one
// PostgreSQL transaction) with FencedTx, and the same pipeline with the
// fence left out (a plain transaction, the offset upserted without its
// token), side by side: each variant has its own nats-server, schema and
// fleet, and the two run at the same time, so the machine's noise (a shared
// 2-core box) falls on both alike, as commit-throughput pairs its writes.
// Each trial: fresh streams and schemas, both fleets started and settled; a
// backlog is published to each while every handler is held before its first
// transaction, then both are released together — the throughput is a
// variant's backlog ÷ (its last effect committed − release) — then a steady
// paced load on both, whose events give the latency from publish to
// committed effect (batches of one or two events: the fence's cost per
// transaction shows there).
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: both variants run at once on fresh streams and
// schemas each trial, so the comparison is the same machine at the same
// time; transactions the fence refused (a worker starved of CPU past its
// lease) are counted in the row, never hidden.
//
// How it fails: no PostgreSQL (without --postgres, a throwaway cluster
// from the installed binaries), no nats-server, a fleet that does not
// settle within a minute, or events not committed within five minutes end
// the scenario with an error.
package streame2e
