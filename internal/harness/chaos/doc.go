// Package chaos injects real faults into a fleet of `shardd worker`
// processes on a real Consul cluster — three servers, and client agents
// that the workers talk to as applications talk to their host's agent —
// with offsets in a real PostgreSQL, and checks afterwards the recorded
// history of every offset-store call and of every shard handler's run
// (internal/offsetlog).
//
// The faults, each injected many times. Into one worker: SIGSTOP past the
// TTL and the lock-delay, then SIGCONT; SIGKILL, restarted under the same
// ID; cut off from Consul but not from PostgreSQL (a Proxy between the
// worker and its agent, in Partition mode); slow renewals and failing
// renewals (latency and HTTP 500 on the renewal calls, through the Proxy);
// its session destroyed by a third party (the harness, through a server),
// and the same while the worker is cut off, which only the lock-delay rule
// covers. Into the assignor — whichever worker holds P/assignor when the
// fault starts, never another in its stead: SIGKILL, restarted under the
// same ID; SIGSTOP past the TTL and the lock-delay, then SIGCONT. Into one
// client agent, hitting every worker that talks to it:
// SIGKILL, then a restart (Serf marks the node failed, which ends its
// sessions, while its workers cannot reach Consul); SIGSTOP past the TTL,
// then SIGCONT (the workers keep running); `consul leave`, then a restart.
// And the Raft leader killed, then restarted.
//
// TestChaosEtcd runs the same fleet on a three-member etcd cluster
// (shardd worker --etcd), each worker behind its own TCPProxy to one
// member, through the faults etcd has: SIGSTOP, kill -9, a partition from
// etcd, its lease revoked by a third party (EtcdWorkerKinds), the same on
// the assignor, and the etcd leader killed; with the same checks.
//
// The checks on the store calls (History.Check): no commit accepted whose
// token is below a token already accepted for the shard before the commit
// started (a stale commit); accepted offsets never go back; no load misses
// a commit acknowledged before it started. Porcupine's linearizability
// check of the same history is run by the package's test (porcupine is a
// test dependency). The check on the handler runs (CheckRuns): of two runs
// of one shard with different tokens, the older must have ended before the
// newer started, so no instant has two processes running one shard. The
// one exception, counted apart and never hidden, is a process the harness
// SIGSTOPped before the newer run started and continued after: it ran
// nothing meanwhile, and it may record no effect from the newer start on.
// Every history line carries the wall-clock time of its writer; all the
// processes run on one machine, so they share one clock, which is what
// comparing their times assumes.
//
// The check on P/assignor (AssignorProblems): after every assignor fault
// another session holds it within 30 s. The key is followed by a blocking
// query through a server, so a holder that came and went between two of
// its answers is not seen, and the time to it is an upper bound when its
// value's since cannot be used.
//
// Summary derives, per fault kind, how many faults were injected, the
// commits fenced-out owners attempted and how many of those were accepted,
// the overlaps, the takeover times, the records re-processed per takeover,
// and for assignor faults the time to the new assignor.
//
// TestChaos injects the worker and agent faults first, several at once on
// distinct workers, and the leader kills after them: an election takes
// longer than the workers' pause budget, so a leader kill makes most of the
// fleet step down, and run together they would leave the other faults'
// victims with nothing to lose.
//
// What it does not do: the nemesis runs real processes and real time, so a
// run is not repeatable (the seed fixes the order of the faults only).
// The package is for the chaos test (TestChaos) and `make chaos`; it holds
// no production code.
package chaos
