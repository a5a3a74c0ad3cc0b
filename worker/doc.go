// Package worker runs a shard owner: it joins a fleet through a
// shard.Coordinator, keeps one session alive, acquires the shards the
// rebalancer designates for it, fences each new claim in the offset store,
// runs the user's Handler once per owned shard, and hands shards off or steps
// down when ownership ends.
//
// # Lifecycle
//
// Worker states: joining → active → draining → stopped. After a loss the
// worker goes back to joining with a new session. Shard states: acquiring →
// owned → revoking → released, or owned → lost. One goroutine (the loop) owns
// this state; the watcher, the renewer and the shard runners send it events.
//
// # The handler contract
//
// Process(ctx, claim) runs while the shard is owned. ctx ends when ownership
// ends, and context.Cause(ctx) says which way:
//
//   - ErrRevoked: the shard is being handed off (rebalance, drain, shutdown).
//     Finish the current item, Commit, and return. The lock is released only
//     after Process returned, or after Config.DrainTimeout.
//   - ErrLost: authority is already gone (the session expired, renewals
//     failed past the local deadline, or another session holds the shard).
//     Commits will be rejected by the store; return at once.
//
// A Process that returns (with or without an error) while the shard is still
// owned is restarted with jittered exponential backoff. A panic in Process is
// recovered, logged and treated as an error. Process calls for different
// shards run concurrently; calls for one shard never overlap within a worker.
//
// # Rounds
//
// Hand-offs happen in rebalance rounds, spaced Config.RoundEvery apart
// (± 50 % jitter), each moving a bounded number of shards. A new term
// acquires nothing before its first round, so that a fleet starting
// together does not see its first worker grab every shard — unless its first
// snapshot shows every shard held by a live member, when there is nothing to
// grab and it takes what is handed to it at once. A change of live members
// brings the next round forward to within RoundEvery/4 (never closer than
// that to the previous round), so a join is absorbed in about a quarter of
// a round. A free shard that Acquire refuses (its old owner's lock-delay) is
// retried when the delay should be over (Config.LockDelay, doubling on
// repeated refusals up to RoundEvery), not only at the next round.
//
// # What is guaranteed
//
// Before Process starts, the claim's token has been fenced in the offset
// store (Store.Fence), so every later write of an older owner is rejected and
// every write it got in before is visible in Claim.Start. The worker steps
// down — every shard context is cancelled with ErrLost — when no renewal has
// succeeded within LeasePolicy.StepDownAfter of the start of the last
// successful one, which is before the coordinator can expire the session.
// Renewal runs on its own goroutine, never behind handler work.
//
// # What is not guaranteed
//
// A worker cannot stop a handler that ignores its context, nor a process that
// is paused: a paused worker wakes up believing it owns its shards. Safety
// then rests on the fence: its late commits fail with offsets.ErrStaleToken.
// Writes a handler makes to systems that do not check the token are not
// protected.
package worker
