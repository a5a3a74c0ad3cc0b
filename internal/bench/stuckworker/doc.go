// Package stuckworker is shardbench's stuck-worker scenario: 12 workers over
// 128 shards on Consul, one of them live (it renews, it watches its key, it
// may even be the assignor) but never taking a shard it is given. The
// assignor must judge it stuck, give its shards to the others once, and hand
// it nothing more under that session. Measured over the run, from the moment
// every worker was started: the unowned shard-time (the integral over time
// of the shards without a live holder, over shards × the run's length), and
// how often a shard changed owner after its first placement. The same check
// on the embedded coordinator is worker's TestStuckWorkerDoesNotFlap. The
// baseline has no assignment a worker could be stuck in: no baseline row.
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: each trial is a fresh fleet; at most two trials run
// (each takes the whole span), and the rows say so when --trials asked for
// more.
//
// How it fails: a stuck worker that is no longer a member at the end (it
// should stay live) is an error, as is a fleet that cannot start.
package stuckworker
