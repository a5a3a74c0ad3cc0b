// Package rebalance is the planner: a pure function from one snapshot of a
// fleet (its shard set, its live members and their weights, and who holds
// which shard) to a target assignment and the moves that reach it. It does no
// I/O and reads no clock, randomness or environment, so every worker that
// sees the same snapshot computes the same Plan and they agree on who should
// take each shard without talking to each other.
//
// # What a Plan guarantees
//
//   - Coverage: every shard of the set has exactly one target, a live member.
//     In particular a free shard has exactly one designated acquirer.
//   - Capacity: member quotas sum to the shard count and each member's target
//     count equals its quota. Quotas follow the weights by the
//     largest-remainder method: a member gets ⌊N·w/Σw⌋ or ⌈N·w/Σw⌉ shards,
//     so with equal weights target counts differ by at most one. A draining
//     member gets none, unless every member drains (shards must go somewhere).
//   - Stickiness: every member keeps min(owned, quota) of the shards it holds.
//     A member over its quota keeps those with the highest rendezvous score and
//     releases the rest. The rounding slots (the "+1"s) go first to members
//     that would otherwise have to release a shard, so that, from a converged
//     assignment with equal weights, a join moves at most ⌈N/(W+1)⌉ shards (all
//     to the joiner) and a leave moves only the leaver's shards.
//   - Convergence: applying a Plan (every shard held by its target) and
//     planning again yields the same targets and no moves.
//   - Determinism: the order of Members, Shards and map iteration does not
//     matter. The rendezvous score (xxhash of shard ID, a zero byte, member
//     ID) and every tie-break are part of the protocol between workers:
//     changing them makes workers of two versions disagree during a rolling
//     upgrade, which costs extra moves until the old version is gone.
//
// # What it does not guarantee
//
// A Plan is only as current as its snapshot. Workers that see different
// snapshots may compute different targets; the coordinator's locks decide who
// actually holds a shard and fencing tokens (package offsets) make a stale
// holder harmless. The planner does not pace anything: a Plan lists every
// move at once, and it is the worker that releases a few shards per round and
// waits a grace period before taking an orphan targeted to someone else.
// With unequal weights the join bound does not hold in general: quotas stay
// within one of each weighted share, and a share that becomes a whole number
// forces its holder to shed down to it, so a shed shard may go to another
// old member instead of the joiner (weights 1,1,3,3 and 12 shards: a joiner
// of weight 1 gets one shard, an old member the other).
// Owners entries for shards outside the shard set are ignored; an owner that
// is not a live member is treated as dead and its shard as free. Weights above
// 2^32 are treated as 2^32 (so that the arithmetic cannot overflow).
//
// # How it fails
//
// Compute returns an error wrapping ErrInvalidInput, naming the offending
// values, for an empty or duplicate member ID and an empty or duplicate shard
// ID. It never panics. Cost is O(N log N + F·W) for N shards, F of them to be
// placed, and W members.
package rebalance
