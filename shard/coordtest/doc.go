// Package coordtest is the conformance suite of shard.Coordinator: the
// cases every coordinator must pass, so that the embedded coordinator
// (shard/memory) provably behaves like Consul (shard/consul) where
// shardlease depends on it. It is a test helper: import it from _test files
// only.
//
//	coordtest.Run(t, func(t *testing.T) shard.Coordinator { return memory.New() },
//		coordtest.WithOperator(...), coordtest.WithTiming(...))
//
// Each case opens its own coordinator on a fresh, empty fleet namespace
// (for Consul, a fresh random prefix) and runs in parallel with the others.
// What is checked: acquire and release; re-acquiring a held shard returns
// the same token without a write; tokens strictly increase per shard across
// owners and after the lock key is deleted; session invalidation (destroy,
// TTL expiry) releases every lock and member key of the session; lock-delay
// after an invalidation, a destroy included (the shards a destroyed session
// still held stay closed for its lock-delay), but not after a release;
// watch index rules (0 at once, blocks until a change, returns on ctx end);
// a member watch that wakes for its key's every change (its session's
// write, an operator's put, the session's end, a delete) and for nothing
// else; an acquisition larger than one transaction; Configure mismatch
// naming both configs, or both protocols; Join conflict; argument and
// gone-session errors and lock names; concurrent acquirers never overlap.
// The assignor: an Acquire of shard.AssignorLock (a campaign) takes
// P/assignor with an epoch that increases across holders (also after the
// key was deleted), is idempotent for the holder and refuses others
// without a write; a Release (a resignation) frees it at once; the lock dies
// with its session and stays closed for the lock-delay; Assign is refused
// (ErrNotAssignor, nothing written) to any session but the holder at its
// exact epoch, splits into transactions of the coordinator's size and
// writes them all; Assignments.Watch wakes for its own key's write and
// deletion and not for other keys while its key exists; snapshots list
// the assignor and the assignments, and unreadable assignment values as
// problems.
//
// Timing is real time, bounded by Timing: a coordinator with slower
// invalidation (Consul's session TTL mode takes up to 2·TTL) states it
// there. Only two cases wait for a TTL: expiry and lock-delay share one
// wait. One more waits out a lock-delay after a destroy.
//
// What it does not check: behaviour that legitimately differs (see the
// package docs of shard/memory and shard/consul): exact index values, a
// watch index ahead of the store's, Problems other than unreadable
// assignment values, lock-delay on member keys, whether a member or
// assignment watch on a missing key wakes for other writes (Consul's index
// of a missing key is the whole store's, so it may), and that every
// transaction of a split Assign checks the assignor lock (an embedded
// coordinator's call is atomic; shard/consul tests it on its own).
package coordtest
