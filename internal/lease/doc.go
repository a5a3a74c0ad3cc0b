// Package lease keeps one coordinator session alive under a
// shard.LeasePolicy and ends its authority before the coordinator can: the
// one session-keeping primitive of the worker and the election.
//
// A Lease is one session's term. Its context is cancelled, with a cause
// wrapping the owner's loss sentinel (Config.Lost), at the local step-down
// deadline (the start of the last successful renewal plus the policy's
// StepDownAfter, enforced by a timer and also read from the clock by
// Authority.Err, so a process paused across it refuses at once) or as soon
// as the coordinator says the session is gone. A renewal that succeeds
// after that does not bring the term back: the owner opens a new session.
//
// An Authority is one holder's right to act under a lease (a worker's
// claim on a shard, an election's term): it ends with the lease, or
// earlier when its owner says so, and Authority.Commit refuses a commit
// once it has ended.
//
// What it does not do: it takes no lock and writes no key; keeping a lock
// is the coordinator's (a lock lives as long as its session), and fencing
// is the offset store's. The lease's deadline is local: the coordinator
// may keep the session up to its TTL (2·TTL on Consul) after it, which the
// lease policy's lock-delay rule covers.
package lease
