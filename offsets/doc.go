// Package offsets keeps each shard's committed offset behind a fencing token,
// so that an owner who lost its shard without knowing it cannot write.
//
// # What a Store guarantees
//
// For each shard a Store holds a Checkpoint: the last committed Offset, the
// Token that wrote it, and the Floor, the highest token fenced or committed
// for the shard. The rule, the same in every backend:
//
//   - Fence(s, t) raises the floor to t without changing the offset. A token
//     below the floor is rejected; a token equal to it is a no-op.
//   - Commit(s, t, off) with t below the floor is rejected with an error
//     wrapping ErrStaleToken that names the shard, the token and the floor,
//     and leaves the checkpoint unchanged.
//   - Commit with t equal to the floor overwrites the offset (it need not
//     grow: the owner decides what it has processed).
//   - Commit with t above the floor stores the offset and raises the floor
//     to t.
//
// The check and the write are one atomic step: a mutex (offsets/memory), one
// bbolt read-write transaction (offsets/bolt), a CAS transaction (Consul KV),
// one conditional upsert (PostgreSQL). There is therefore never a stale
// commit: once a token t has been fenced or committed for a shard, no commit
// with a lower token is accepted for it. Because a new owner fences before it
// loads, every write its predecessor got in before the fence is visible to
// its load, and none after it is accepted, so an offset is never lost and
// never goes backwards across a change of owner.
//
// ApplyFence and ApplyCommit state the rule once, as pure functions on a
// Checkpoint; backends that hold the checkpoint themselves call them inside
// their atomic step rather than restating it.
//
// # What it does not guarantee
//
// A Store does not stop a stale owner from running, only from writing through
// the Store. Work the stale owner does elsewhere (an e-mail sent, a row
// written to another database) is not fenced unless that write, too, carries
// the token and is checked against the same floor. Nor does the Store know
// who owns a shard: it trusts that a higher token means a later owner, which
// the coordinator (package shard) guarantees.
//
// # How it fails
//
// Every error wraps a sentinel or the underlying cause; compare with
// errors.Is:
//
//   - ErrStaleToken: the token is below the floor. The caller is a stale
//     owner and must stop acting for the shard; retrying cannot succeed.
//     The error is a *StaleTokenError, which carries the floor.
//   - ErrInvalidOffset: a negative offset; nothing was written.
//   - shard.ErrInvalidArgument: an empty shard ID or the token 0, which no
//     coordinator issues (a zero token means the caller lost its claim).
//   - ErrClosed: the Store was closed.
//   - the context's error (and its cause) when ctx is done before the
//     operation starts; nothing was written. Once a backend's atomic step
//     has started it runs to completion.
//   - ErrUnavailable: a networked backend could not be reached, or failed
//     the call for a passing reason; nothing was written, retry as it is.
//   - ErrOutcomeUnknown: a write was sent and its answer never came back;
//     it may or may not have happened. Retrying with the same token is
//     safe because an equal token may overwrite.
//   - ErrCorrupt: the shard's stored checkpoint is not a valid record; the
//     shard fails until an operator repairs it.
//   - other backend errors (I/O, the network) are wrapped with the shard
//     they concern.
//
// Each backend's sentinels of the same names (offsets/consul.ErrCorrupt
// and so on) are these very values, so errors.Is matches either.
//
// The conformance suite in offsets/offsetstest pins all of the above; every
// backend runs it.
package offsets
