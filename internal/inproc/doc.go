// Package inproc runs a fleet of shardlease workers inside one process and
// audits the offset store they share. `shardd demo` (internal/demo) and the
// fault simulation (internal/harness/sim) both build their fleets with it;
// it is product code, linked into shardd, so it imports no test harness.
//
// It owns two things:
//
//   - Fleet and Member: start workers (each on its own coordinator,
//     wrapped in a faults.Coordinator), make them leave gracefully, crash
//     them (every call fails, handlers freeze forever, nothing is
//     released, so only the session's expiry frees their shards), and put
//     faults in force under keys (Hold: calls hang or fail, the handlers
//     freeze at the member's gate) that overlap without one's heal ending
//     another. Wire freezes a member's commits on their way to the store.
//   - Auditor: an offsets.Store wrapper that keeps its own record of what
//     the store accepted, per shard, and counts every way the store broke
//     the fencing rule: a commit accepted with a token below one already
//     fenced or accepted, an accepted offset below the previous one, a
//     valid commit or fence refused, a fence accepted below the floor, a
//     new owner started below the last accepted offset. On request it
//     keeps the whole history of fences and commits, ordered by one
//     global sequence, for offsetstest/history.Check.
//
// What it guarantees: the Auditor serializes the operations on one shard
// (a per-shard mutex held across the inner call), so its record follows
// the store's own order for that shard exactly; different shards proceed in
// parallel. A crash is for good: a crashed member's Holds and heals no
// longer change it, and StopAll leaves it unreachable, so it never releases
// what it held.
//
// What it does not guarantee: a Member freezes only what passes its gate
// and its fault layer — its handlers (where they wait at the gate) and its
// coordinator calls. The worker runtime's own goroutines (its step-down
// timer, its loop) keep running through a pause, which a real
// stop-the-world pause would freeze too. The Auditor judges only what went
// through it: a store written to by other clients is outside its record.
package inproc
