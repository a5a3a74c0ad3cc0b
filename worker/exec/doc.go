// Package exec runs a program once per owned shard: Supervisor is a
// worker.Handler that starts one child process for each claim the worker
// hands it, with the claim in the child's environment, and stops the child
// when the claim ends. `shardd run` is a command line around it; any Go
// program that builds a worker.Worker can use it the same way.
//
// # What a child gets
//
// Its own process group; the environment of Config.Env (default the
// program's own) without Consul's ACL token (CONSUL_HTTP_TOKEN,
// CONSUL_HTTP_TOKEN_FILE) and without any SHARDLEASE_* variable, then the
// claim: EnvShard, EnvShardIndex, EnvShards, EnvToken, EnvWorker,
// EnvPrefix and EnvLoadFD. Its standard output and error go to
// Config.Stdout and Config.Stderr line by line, each line prefixed with
// "[shard] " and written whole, so the lines of different children never
// mix (a line longer than 64 KiB is cut).
//
// # Reporting the shard's load
//
// Descriptor 3 (EnvLoadFD says so) is the write end of a pipe the
// Supervisor reads: a child that writes lines "load <number>" to it
// reports its shard's load, as a Go handler does with
// worker.Claim.ReportLoad, which each line is passed to (a figure ≥ 0 in
// any unit the same for every shard of the fleet; from a shell,
// printf 'load %s\n' 12 >&3). A child that never writes keeps the
// worker's fallback, its commit rate through the claim, which is 0 for a
// child that commits through a store of its own; one that closes the
// descriptor stops reporting, its last figure holding. A line that is not
// "load <finite number ≥ 0>", or is longer than 256 bytes, is ignored,
// counted (Supervisor.BadLoadLines) and logged once per child, quoted and
// cut to 100 bytes; it never stops the child. The pipe is read all the
// time, so a child never blocks on it; no other child inherits it, and
// whatever the child starts inherits it unless the child closes it first.
//
// # Guarantees
//
//   - Revoked (the claim's context ends with worker.ErrRevoked: a hand-off
//     or a shutdown): the child's process group gets SIGTERM, then SIGKILL
//     when Config.DrainGrace has passed or when the claim's authority ends
//     (Claim.Lost: the worker's DrainTimeout, or the lease lost meanwhile),
//     whichever comes first.
//   - Lost (worker.ErrLost, or Claim.Err already set): SIGKILL to the
//     process group at once; another owner may be starting.
//   - Process returns only after the child has been reaped, and the worker
//     releases a shard's lock only after Process returned, so the next
//     owner's child never starts beside this one.
//   - A child that exits while the shard is owned makes Process return an
//     error naming its exit; the worker runs Process again with backoff,
//     with the same claim. Whatever it left in its process group is killed.
//   - On Linux a child gets SIGKILL if the supervising process dies
//     (Pdeathsig), so a crashed supervisor leaves no child running for a
//     shard it no longer holds.
//   - KillAll sends SIGKILL to every child's group at once and keeps new
//     ones from starting: the answer to an operator's second Ctrl-C.
//   - A supervisor that stops running (SIGSTOP, stalled in the kernel,
//     starved of CPU) cannot outlive its lease through its children: a
//     watchdog process SIGKILLs a child's group once the claim's deadline
//     (worker.Claim.Deadline, renewed with it every 200 ms) has passed, and
//     every group it holds when the supervisor's process ends. The
//     watchdog is this program itself, re-executed with
//     SHARDLEASE_EXEC_WATCHDOG=1: the package's init runs the watchdog
//     instead of the program's main then, so any program that imports the
//     package has one. It runs while the Supervisor has children, in a
//     process group of its own, and reads the machine's monotonic clock,
//     which both processes share. A Claim that no Worker issued has no
//     deadline and no watchdog.
//
// # What it does not guarantee
//
// Signals go to the child's process group. A grandchild that left the
// group (setsid, a daemon that double-forks) is out of reach: it is
// neither signalled nor waited for, and its effects after the claim ended
// are not fenced by anything here; the child must stop what it started, or
// send SHARDLEASE_TOKEN with every write so the store refuses a stale one.
// A child that ignores SIGTERM runs until the SIGKILL, up to DrainGrace.
// The watchdog is told of a child just after it started: a supervisor
// stopped in that instant leaves that child to be stopped by the
// supervisor itself when it runs again (the worker's step-down, or the
// claim's Lost). It is told to forget a group just after the child was
// reaped: a supervisor stopped in that instant past the deadline gets a
// SIGKILL sent to a process group ID that is no longer its child's. A
// watchdog killed by someone else leaves the children to the supervisor
// alone (logged at every renewal).
// Pdeathsig does not exist outside Linux: there a supervisor killed with
// SIGKILL leaves its children running. Process groups and signals are
// Unix's; the package does not build elsewhere.
package exec
