// Package election elects one leader among the instances of a program, for
// work that exactly one process at a time must do: a scheduler that enqueues
// jobs, a compactor, a migration runner. An instance is one coordinator
// session plus one lock: it keeps the session alive under a
// shard.LeasePolicy with the worker's rules (renewal, the local step-down
// deadline after the last renewal, the lock-delay of a session that ended),
// and the leader is whichever session holds the election's role lock,
// shard.RoleLock(Config.Name); the token of the write that took the lock is
// the leader's term token. It runs on any shard.Coordinator: the embedded
// one (shard/memory) for goroutines of one process, shard/consul for
// instances on different machines.
//
// # Roles
//
// An instance is in one of five roles, reported in order through
// Config.OnChange and by Status:
//
//	candidate      nobody leads, as far as this instance can see; it is trying
//	leader         it holds the lock and Lead is running (or about to be restarted)
//	stepping_down  its term ended (revoked or lost); Lead has not returned yet
//	follower       another instance leads
//	stopped        Run has returned
//
// A typical life: candidate → leader → stepping_down → candidate or follower.
// A lost term (cut off from the coordinator, paused past the TTL) goes from
// leader to stepping_down at the local deadline, before the coordinator can
// elect anybody else.
//
// # The Lead contract
//
// Lead(ctx, l) runs while this instance leads. ctx ends when the term ends,
// and context.Cause(ctx) tells which way: worker.ErrRevoked (shutdown:
// finish the current step, Commit, return) or worker.ErrLost (authority is
// already gone: the session's local deadline passed, the session ended, or
// the lock was taken from it; return at once, commits will be refused). A
// Lead that returns while the term is still held is called again with
// backoff, with the same token; to give up leadership, end Run's context.
//
// # What is guaranteed
//
// Every term has a fencing token (Leadership.Token) higher than every
// earlier term's, also across coordinator restarts when the coordinator is
// Consul. Before Lead starts, the token has been fenced in Config.Offsets,
// so a checkpoint committed by an earlier leader is in Leadership.Start and
// no commit of an earlier leader is accepted after that. A leader steps down
// locally (ctx ends with ErrLost) before the coordinator can expire its
// session, and the lock stays closed for the session's lock-delay after it
// expires, so no other instance leads before then.
//
// # What is not guaranteed
//
// That only one Lead runs at any instant. A paused or partitioned leader may
// still be running Lead when a new leader starts; the coordinator picks one
// leader, but the work itself must be safe to repeat (idempotency keys) or
// fenced by the token at the system it writes to. Roles are this instance's
// view: an instance learns of a new leader when its watch of the lock does,
// so two instances may briefly disagree about who leads. There is no
// fairness: when the lock is released every candidate tries at once, and
// after a leader's session ended they try again once its lock-delay is
// over, each after its own jitter; whichever tries first takes it, not the
// one that waited longest. Instance IDs are not checked for uniqueness: two
// instances with one ID both campaign, fenced all the same, but each takes
// the other's leadership for its own and reports itself a candidate.
//
// # How it fails
//
// New returns an error wrapping ErrInvalidConfig that names every wrong
// field. Run retries whatever may pass (an unreachable coordinator, a lost
// session: a new session after a jittered backoff) and returns nil after a
// graceful stop, or an error that retrying cannot cure: credentials the
// coordinator refuses (shard.ErrPermissionDenied).
package election
