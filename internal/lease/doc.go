// Package lease keeps one coordinator session alive under a
// shard.LeasePolicy and ends its authority before the coordinator can: the
// one session-keeping primitive of the worker and the election, and the
// one campaign for a role's lock.
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
// Campaign is how a session takes a role's lock (the fleet's assignor, an
// election's leader) and keeps trying: the one candidacy of both.
//
// What it does not do: apart from Campaign's attempts it takes no lock
// and writes no key; keeping a lock is the coordinator's (a lock lives as
// long as its session), releasing one is its holder's, and fencing is the
// offset store's. The lease's deadline is local: it passes before the
// coordinator can end the session (the TTL after the last renewal, on
// Consul up to twice that), and shard.LeasePolicy's rules say why that is
// enough.
package lease
