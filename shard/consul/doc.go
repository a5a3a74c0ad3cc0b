// Package consul is shard.Coordinator on HashiCorp Consul, through
// github.com/hashicorp/consul/api. It is written against Consul 1.14 and is
// checked by the same conformance suite (shard/coordtest) as the embedded
// coordinator, shard/memory, whose semantics are the reference.
//
// # Keys
//
// Everything of one fleet lives under one prefix P (Config.Prefix):
//
//	P/config             JSON shard.Config, written once (CAS, index 0)
//	P/members/<worker>   JSON shard.Member (without Load), locked by the
//	                     worker's session; operators' drain and cordon
//	                     are written here with that session
//	P/loads/<worker>     JSON {shard: load} (keycodec.EncodeLoad, at most
//	                     shard.MaxLoadBytes), locked by the worker's
//	                     session, written only by ReportLoad after a
//	                     check-session of P/members/<worker>; shown as
//	                     the member's Load while that session holds both
//	P/shards/<shard>     JSON shard.Owner, locked by the owner's session
//	P/assignor           JSON {worker, since}, locked by the assignor's own
//	                     worker session; its ModifyIndex is the epoch
//	P/assign/<worker>/shards  JSON shard.Assignment (keycodec.EncodeAssignment:
//	                     shard sets as index ranges, "0-99,150"), and
//	P/assign/<worker>/memory  the assignor's memory about the worker,
//	                     opaque; both written only by the assignor, in
//	                     one transaction, sealed (seal.go)
//	P/freeze             JSON shard.Mark {by, at, reason}, no session: the
//	                     fleet is frozen while it exists (SetFreeze)
//	P/policy             JSON shard.BalancePolicy, no session: the fleet's
//	                     balancing policy (SetPolicy)
//	P/history            the ownership history, in the assignor's format
//	                     (internal/history), no session: written only by
//	                     the assignor, after the checks Assign makes
//	                     (History.Record), and never read by Watch
//
// P/offsets/ belongs to the offsets store and is left alone. Anything else
// under P is reported in Snapshot.Problems and ignored.
//
// # Sessions
//
// One session per worker, Behavior=release, named after the worker, with
// the SessionSpec's lock-delay (0 is sent explicitly: an omitted one means
// Consul's 15 s). Two liveness modes (Config.Liveness):
//
//   - LivenessCheck (default): the session is bound to serfHealth and to a
//     TTL health check registered on the agent for it, as an instance of the
//     service ServiceName (ID CheckIDPrefix + worker + random, for both).
//     Sessions.Renew passes the check and then reads the session, since a
//     check that went critical has already invalidated it. Consul
//     invalidates the session about SessionSpec.TTL after the last pass.
//     Sessions.Destroy deregisters the instance; a crashed worker's critical
//     check is removed by the next Sessions.Create on that agent, or by the
//     agent itself a minute later (DeregisterCriticalServiceAfter). A
//     service check rather than a node check, because a critical node check
//     would mark every service on that agent's node unhealthy. Each check
//     lives on the agent the coordinator talks to: workers should talk to
//     their local agent.
//   - LivenessTTL: a session TTL, 10 s to 24 h; Consul may take up to 2·TTL
//     to invalidate it.
//
// # Guarantees
//
//   - A claim's token is the ModifyIndex read by a get in the same
//     transaction as the lock: a Raft index, so for one shard tokens strictly
//     increase across owners, also after the key was deleted.
//   - A shard the session already holds is never locked again (that would
//     move its token): Acquire reads first and returns the current token.
//   - Acquire and Release take MaxTxnShards shards per /v1/txn transaction
//     (Consul 1.14 caps a transaction at 128 operations; a lock is a lock and
//     a get). A transaction rolled back by a refused lock (held, lock-delay)
//     is retried without the refused shards.
//   - Release sets no lock-delay. Sessions.Destroy is an invalidation, as
//     Consul makes it: the shard keys the session still holds stay closed
//     to everyone for its lock-delay (measured on 1.14.8: a 2 s delay
//     refused every acquire until 2.0 s after the destroy). Its member keys
//     are unlocked first, so a worker can join again under its ID at once.
//   - The assignor's epoch is the ModifyIndex read by a get in the same
//     transaction as its lock of P/assignor, so epochs strictly increase
//     across holders, also after the key was deleted. P/assignor dies with
//     its session and its lock-delay applies, as for shard keys.
//   - Every /v1/txn transaction of an Assign opens with check-session and
//     check-index on P/assignor (the caller's session and epoch), so a
//     paused or deposed assignor's write is refused by Consul itself; it
//     carries at most MaxTxnAssignments workers (a key and its memory each) and about 480 KiB (Consul
//     1.14.8 refuses a body over txn_max_req_len, 512 KiB by default).
//   - Watch never returns an unchanged index, and deletes dead member keys
//     after Config.MemberGrace (or at the member's RejoinUntil, if later)
//     with a CAS on their ModifyIndex, each in one transaction with its
//     worker's loads key; a loads key held by no session whose member key
//     is missing is deleted at once (CAS).
//   - A coordinator runs the config its Configure settled for good. A
//     P/config rewritten, broken or deleted under it is reported in
//     Snapshot.Problems, naming both configs, and never adopted: its shard
//     keys stay listed and its Acquire keeps working, while workers that
//     start with the original config are refused (shard.ErrConfigMismatch,
//     naming both) until P/config is restored. A coordinator never
//     configured (an operator's view) shows the stored config, and says so
//     when held shard keys lie outside it.
//
// # What it does not guarantee
//
//   - Atomicity across transactions: an Acquire of more than MaxTxnShards
//     shards, or an Assign of more than one transaction's keys, is several
//     writes, and a failure half-way leaves the earlier ones in place (an
//     Acquire returns their claims with the error, an Assign says how many
//     keys they wrote). Watchers may see the batches one by one.
//   - Exact timing: invalidation happens on Consul's timers (the check's TTL
//     plus a sync, or between TTL and 2·TTL), never before TTL.
//   - That a renewal that succeeded means the session is still alive a
//     moment later. Fence every write with the claim's token.
//
// # Differences from the embedded coordinator
//
// Consul puts member keys under lock-delay too, so a worker restarting at
// once under its old ID after a crash is refused by Join with
// shard.ErrUnavailable until the delay ends. A watch index ahead of
// Consul's blocks (up to WatchWait) instead of returning at once. The
// watch index is the prefix's X-Consul-Index, not a per-fleet counter.
// A Members.Watch or Assignments.Watch on a missing key is answered with the
// KV store's highest index (Consul 1.14.8): asked with an older index it
// returns at once, still missing; once blocked, other keys' writes do not
// end it, but its wait's end returns the store's moved index (measured by
// TestWatchAssignmentOfAMissingKey). A watch on an existing key wakes only
// for that key.
// Snapshots list foreign and malformed keys in Problems. Session IDs are
// Consul's UUIDs. Dead member grace counts from when a coordinator first
// saw the member dead, not from the moment it died.
//
// # Connection and the Consul layer
//
// The coordinator keeps its Consul client to itself. A process that also
// keeps offsets in Consul opens offsets/consul with the coordinator's
// Connection (Config.Connection or Coordinator.Connection): the same
// address, token, TLS and transport wrapper, and a pool of the store's
// own. The KV calls, the /v1/txn request, the transaction cap, the
// chunking, the prefix rule and the reading of failures are
// internal/consulkv's, shared with offsets/consul; sessions, checks and
// the agent are this package's alone. DeleteFleet removes a fleet's keys
// for tests and benchmarks that made one of their own.
//
// # How it fails
//
// Calls honour ctx (its cause is returned once it ends) and are bounded by
// Config.RequestTimeout. Connection failures, timeouts, HTTP 429 and 5xx
// (including "No cluster leader" during an election) wrap
// shard.ErrUnavailable with the detail; ACL refusals wrap
// ErrPermissionDenied and name the permissions the token needs; a session
// Consul does not have (renew 404, unknown check, "invalid session") wraps
// shard.ErrSessionInvalid; argument problems wrap shard.ErrInvalidArgument,
// shard.ErrUnknownShard, or the config's Validate error.
package consul
