// Package procfleet runs a fleet of worker processes on Consul and watches
// it, for the harnesses that need real processes: internal/harness/chaos
// (faults into `shardd worker` processes) and shardbench's ownership
// scenarios (internal/bench/fleet: `shardd worker` and the api.Lock
// baseline's apilockd, killed with SIGKILL and stopped with SIGTERM).
//
// Fleet starts each worker ID as a child process (internal/harness/shardproc:
// output appended to Dir/ID.log, killed with this process if it dies
// first), with the fleet's arguments, its own, then --id and --history
// Dir/ID.jsonl. A worker's process may be signalled (SIGSTOP, SIGCONT),
// killed, stopped and started again under the same ID; every process it
// had is a Life, which closes the handler runs of a process killed before
// it could record their end. With FollowStarts, each history is read as it
// grows and every handler's start line lands in a StartLog.
//
// Observer reads a shardlease fleet's prefix as a third party does: View,
// who owns which shard and which members are live, and the holder of
// P/assignor.
//
// What it guarantees: Worker.Stop and Worker.Done return only once the
// process has exited and, with FollowStarts, its history has been read to
// its end, so a StartLog is complete for an exited process. A worker has at
// most one process at a time: Start refuses while one runs.
//
// What it does not do: judge anything. The figures and checks are the
// callers'. Times come from the workers' wall clocks, which is sound only
// because every process runs on this machine.
//
// How it fails: methods return errors (a binary that does not start, a
// process that outlives SIGTERM and must be killed) and never fail a test,
// so they may be called from any goroutine. It is harness code: shardd and
// shardctl never link it; shardbench does.
package procfleet
