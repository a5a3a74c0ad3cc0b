// Package chaos injects real faults into a fleet of `shardd worker`
// processes on a real three-server Consul cluster, with offsets in a real
// PostgreSQL, and checks the recorded history of every offset-store call
// (internal/offsetlog) afterwards.
//
// The faults, each injected many times: SIGSTOP of a worker past its TTL
// then SIGCONT; SIGKILL of a worker, restarted under the same ID; a worker
// cut off from Consul but not from PostgreSQL (a Proxy between the worker
// and its agent, in Partition mode); slow renewals and failing renewals
// (latency and HTTP 500 on the renewal calls, through the Proxy); and the
// Raft leader killed, then restarted.
//
// The checks (Check): no commit accepted whose token is below a token
// already accepted for the shard before the commit started (a stale
// commit); accepted offsets never go back; no load misses a commit
// acknowledged before it started. Porcupine's linearizability check of the
// same history is run by the package's test (porcupine is a test
// dependency). Summary derives, per fault kind, how many faults were
// injected, the commits fenced-out owners attempted and how many of those
// were accepted, the takeover times, and the records re-processed per
// takeover.
//
// TestChaos injects the worker faults first, several at once on distinct
// workers, and the leader kills after them: an election takes longer than
// the workers' pause budget, so a leader kill makes most of the fleet step
// down, and run together they would leave the worker faults' victims with
// nothing to lose.
//
// What it does not do: the nemesis runs real processes and real time, so a
// run is not repeatable (the seed fixes the order of the faults only).
// The package is for the chaos test (TestChaos) and `make chaos`; it holds
// no production code.
package chaos
