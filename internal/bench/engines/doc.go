// Package engines is shardbench's engines scenario: shardlease on etcd
// beside shardlease on Consul, measured in one run so that every ratio
// compares figures taken side by side. On the common fleet (12 worker
// processes over 128 shards, FastPolicy): a kill -9 and a SIGTERM of a
// worker that is not the assignor's (at least 20 trials each), and a 13th
// worker joining. On the large fleet (1,000 in-process workers over
// 100,000 shards, each with its own client and session, DefaultPolicy):
// cold starts, joins of a 1,001st worker (time, shards moved, and the
// bytes the whole fleet reads until it is balanced again), and the
// requests each worker sends per second in steady state.
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: both engines run the same code and the same trials;
// each etcd row follows the Consul row of the same measure, with etcd ÷
// Consul for p50 and p99 beside it. The goals at the large size are etcd's
// (issue 32); Consul's rows there carry none and are given as they are. A
// cold start at the large size that does not converge within
// Params.ColdWithin of its last worker's start counts as the time until it
// gave up, says so in its row, and ends that engine's large rows; one that
// converges slower than Params.SlowCold is the last cold start, and the
// joins and the request rate are measured on its fleet.
//
// How it fails: an etcd that cannot be started or reached, or a fleet
// that cannot be made, ends the scenario with an error; the rows measured
// before it are kept.
package engines
