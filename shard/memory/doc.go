// Package memory is the embedded coordinator: HashiCorp Consul's sessions,
// locks and blocking queries, as shardlease uses them, held in one process's
// memory. It is the product's default coordinator and the one every unit test
// uses.
//
// # Model
//
// The coordinator is a small key-value store (one config key, member keys,
// loads keys, shard lock keys, the assignor lock and assignment keys) with a
// write index that starts at 1 and grows by one per write. The writes are:
// the first Configure; a Join; a ReportLoad; each transaction of an Acquire or Release that
// locks or unlocks something (at most MaxTxnShards shards each, as Consul
// caps a transaction), shard locks and role locks (P/assignor) alike; each transaction of an Assign that changes a key (at most
// MaxTxnAssignments keys each); the end of a session that held keys (all
// its keys in one write); DeleteShard, DeleteMember, PutMember,
// DeleteAssignor and PutAssignmentValue; and the deletion of a dead member
// key. Nothing else moves the index: creating or renewing a session is not
// a write, because sessions are not keys. So the index changes exactly
// when a Snapshot would, and Watch never wakes a watcher for nothing.
//
// # Guarantees
//
//   - A claim's token is the index of the write that locked the shard, so
//     for one shard tokens strictly increase across owners, also after
//     DeleteShard (a delete is a write; the next lock is a later one).
//   - A shard is held by at most one session at any moment. Every method call
//     is atomic with respect to every other and to watchers, even when it is
//     split into several transactions.
//   - A session is invalidated exactly TTL after its creation or last renewal,
//     on the coordinator's Clock: not a nanosecond before, and a renewal that
//     arrives at exactly TTL is too late. A timer makes it happen when nobody
//     calls the coordinator (a watcher sees it), and every call first applies
//     whatever is due, in the order it fell due, so the outcome of a call
//     depends only on the clock's reading, never on timer scheduling.
//   - Invalidation — an expiry or Sessions.Destroy, as in Consul — releases
//     every key of the session (values kept, session cleared) and keeps each
//     released lock, a shard's or a role's, from being taken by any session
//     for the session's LockDelay. Release is voluntary and sets no
//     lock-delay.
//   - The assignor's epoch is the index of the write that took P/assignor,
//     so it strictly increases across holders, also after DeleteAssignor.
//     Every transaction of an Assign checks that the session holds
//     P/assignor at the epoch given; as every call is atomic, an Assign is
//     refused (shard.ErrNotAssignor) before it writes anything or not at
//     all.
//   - A member key left without a session is shown as dead (empty Session)
//     and deleted after the member grace (WithMemberGrace, default one
//     minute), with no operator action, in one write with its worker's
//     loads key. A loads key is shown as its member's Load only while the
//     member's live session holds it.
//
// # What it does not do
//
//   - Persist. A new Coordinator starts at index 1, so its tokens are lower
//     than those an earlier process handed out. Pair it with an offsets store
//     that lives no longer than the coordinator (offsets/memory), or start
//     the index above every token the store has seen (WithStartToken).
//   - Coordinate processes. It fences goroutines of one process; a fleet of
//     processes needs shard/consul.
//   - Wake watchers when a lock-delay ends: that is not a write, in Consul
//     either. A worker refused by lock-delay retries on its own schedule.
//
// # Differences from Consul
//
// Consul may take up to 2·TTL to invalidate a session and has a minimum TTL
// of 10 s; here invalidation takes exactly TTL and any positive TTL is
// accepted. Consul applies lock-delay to every key a session held; here only
// shard keys get it, so a restarted worker can Join again under its old ID at
// once. A watch index ahead of the store's returns at once (Consul waits out
// the query's timeout) so that shard.NextIndex sees the reset. A
// Members.Watch or Assignments.Watch on a missing key is woken only by that
// key's writes (Consul's also returns when other keys were written, see
// shard/consul). Snapshots list Problems
// only for assignment values written by PutAssignmentValue that cannot be
// read: there is no way to write a foreign key. Assign writes
// MaxTxnAssignments keys per transaction, fewer than Consul's 126.
//
// # How it fails
//
// It is never unavailable and never returns shard.ErrUnavailable. Calls fail
// only on their arguments (shard.ErrInvalidArgument, shard.ErrUnknownShard,
// the config's Validate error), on a gone session (shard.ErrSessionInvalid),
// on a conflict (shard.ErrMemberExists, shard.ErrConfigMismatch,
// shard.ErrNotAssignor), or when their context has ended (context.Cause).
// A failed call changes nothing.
//
// # Testing
//
// Time comes from a Clock (default: the time package). Inside a
// testing/synctest bubble the default clock is the bubble's fake clock, so
// TTLs, lock-delays and grace periods pass instantly and exactly; create the
// coordinator inside the bubble and use it only there.
package memory
