// Package coldstart is shardbench's cold-start scenario: workers all start
// together on an empty prefix. Measured: the time until every shard is owned
// by a live worker with max−min ≤ 1, and the failed acquire attempts (shards
// asked for and not granted) per successful one. The goal is for 100 workers
// × 10,000 shards (each an in-process worker with its own Consul client and
// session), measured also at 100 × 1,000. The baselines cannot be run at
// those sizes — 100 × 10,000 would be one million api.Locks, each with a
// blocking query — so all three systems are also measured at 12 × 128, the
// size of the other scenarios (shardlease and the tuned baseline on
// shard.DefaultPolicy).
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: each trial is a fresh fleet on a fresh prefix; a
// shardlease trial that does not converge within Params.Within counts with
// that bound as its time, says so in its row, and ends that size's trials
// (each such trial costs minutes and says the same).
//
// How it fails: a fleet that cannot be started, or a baseline whose locks
// are not all held within three minutes, ends the scenario with an error;
// the rows measured before it are kept.
package coldstart
