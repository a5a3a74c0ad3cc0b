// Package steady starts fleets of shardlease workers in this process all
// at once on a fresh prefix, each with its own Consul client, session,
// request counter and acquire counter, and measures them: the cold start
// (until every shard is owned by a live worker and counts differ by at most
// one, with the acquire attempts that failed and the hand-offs), then the
// Consul requests per worker per second over a steady-state window, in
// total and per endpoint. It is `shardbench consul-steady` (Measure,
// Print), and the fleets of the cold-start and coordinator-load scenarios
// (ColdStart, Fleet).
//
// What it guarantees: the observer follows the prefix with blocking queries
// as the workers do (polling a large prefix would itself load the agent);
// the acquire counters are read only once no Acquire is in flight (at most
// a second), so granted counts match asked ones; Close drains every worker
// and deletes the fleet's keys.
//
// How it fails: a cold start that does not converge within
// Options.Converge returns ErrNotConverged with the figures counted until
// then, the fleet already closed; a worker that cannot be made is an error.
package steady
