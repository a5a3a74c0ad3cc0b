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
// claim: EnvShard, EnvShardIndex, EnvShards, EnvToken, EnvWorker and
// EnvPrefix. Its standard output and error go to Config.Stdout and
// Config.Stderr line by line, each line prefixed with "[shard] " and
// written whole, so the lines of different children never mix (a line
// longer than 64 KiB is cut).
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
//
// # What it does not guarantee
//
// Signals go to the child's process group. A grandchild that left the
// group (setsid, a daemon that double-forks) is out of reach: it is
// neither signalled nor waited for, and its effects after the claim ended
// are not fenced by anything here; the child must stop what it started, or
// send SHARDLEASE_TOKEN with every write so the store refuses a stale one.
// A child that ignores SIGTERM runs until the SIGKILL, up to DrainGrace.
// Pdeathsig does not exist outside Linux: there a supervisor killed with
// SIGKILL leaves its children running. Process groups and signals are
// Unix's; the package does not build elsewhere.
package exec
