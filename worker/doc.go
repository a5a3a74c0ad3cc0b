// Package worker runs a shard owner: it joins a fleet through a
// shard.Coordinator, keeps one session alive, acquires the shards the
// fleet's assignor assigns to it, fences each new claim in the offset store,
// runs the user's Handler once per owned shard, and hands shards off or steps
// down when ownership ends.
//
// # Lifecycle
//
// Worker states: joining → active → draining → stopped. After a loss the
// worker goes back to joining with a new session. A stop with
// Config.DrainBeforeStop is draining while the assignor moves its shards
// away, the worker still handing off what its assignment drops. Shard states: acquiring →
// owned → revoking → released, or owned → lost. One goroutine (the loop) owns
// this state; the assignment watcher, the renewer and the shard runners send
// it events.
//
// # The handler contract
//
// Process(ctx, claim) runs while the shard is owned. ctx ends when ownership
// ends, and context.Cause(ctx) says which way:
//
//   - ErrRevoked: the shard is being handed off (rebalance, drain, shutdown).
//     Finish the current item, Commit, and return. The lock is released only
//     after Process returned, so the next owner never starts beside it.
//   - ErrLost: authority is already gone (the session expired or was ended
//     by someone else, renewals failed past the local deadline, or another
//     session holds the shard). Commits are refused; return at once.
//
// A context's cause cannot change, so authority has a second signal that
// reaches a draining handler too: Claim.Lost closes when the claim may no
// longer act — at the local deadline, when the shard is taken, or when a
// revoked handler overruns Config.DrainTimeout — and Claim.Err says so,
// reading the clock as well (a process paused across its deadline gets
// ErrLost on its first Err after waking). Check Err right before any effect
// that no fence protects. Commit returns ErrLost without reaching the store
// once authority has ended.
//
// When the fleet reshards (docs/design.md, "Resharding"), Claim.Closing
// closes for a shard that is a parent: run it to its end (for a stream,
// the marker the producer left at the switch), commit that end with
// Claim.Close (or CloseWith, for a handler's own fenced write) and return;
// the worker releases it as closed and never runs it again. A child
// starts only once all its parents are closed, and while it has committed
// nothing its Claim.Parents holds their final checkpoints, fenced with the
// child's token first. A handler that cannot close a shard says so
// (ShardCloser), and no reshard starts while its worker is live.
//
// A Process that returns (with or without an error) while the shard is still
// owned is restarted with jittered exponential backoff. A panic in Process is
// recovered, logged and treated as an error. Process calls for different
// shards run concurrently; calls for one shard never overlap within a worker.
//
// # What is guaranteed
//
// No two workers run one shard's handler at the same instant, whichever way
// a lease ends, provided the handler returns when its context ends or Lost
// closes, and the policy's second rule holds (LockDelay ≥ TTL −
// PauseBudget, checked by Validate): a session ended before its TTL cannot
// free its locks before its worker, even cut off, has stepped down. A
// worker that can reach the coordinator learns of an ended session at once
// from its own member key, and writes a deleted or overwritten member key
// back within one watch round.
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
// A worker cannot stop a handler that ignores its context and Lost, nor a
// process that is paused: a paused worker wakes up believing it owns its
// shards until it checks Err. A commit already on its way when the pause
// struck then rests on the fence: it fails with offsets.ErrStaleToken.
// Writes a handler hands to systems that do not check the token, and that
// land after the handler stopped, are not protected. A handler that never
// returns keeps its shard held; at shutdown it is given DrainTimeout plus a
// renewal interval, after which the session is destroyed and only the
// lock-delay stands between it and the next owner.
//
// # The assignor
//
// Every worker is also a candidate for the fleet's assignor role (package
// assignor), with its own session: the holder lists the fleet, decides
// with rebalance.Step and writes each worker's assignment key. Every other
// worker reads one key, its own: it acquires the assigned shards that are
// free (recording in the lock why it was given each), drains and releases
// those taken out of it (with the reason the key gives), and loses a shard
// the assignor saw free after this worker had taken it (its lock was
// released or deleted by someone else). A key that is missing, unreadable
// or not sealed (shard.Unsealed: edited by hand) is not a decision: the
// worker keeps what it runs and starts nothing until the assignor writes
// it again. A shard Acquire refuses (its old owner's lock-delay) is
// retried one lock-delay later, then every renewal interval. When its
// worker stops, the assignor resigns first (no lock-delay); when it dies,
// the next candidate takes over after the lock-delay. The assignment is
// advice: ownership is the lock, the token is the acquisition's index, the
// store is fenced.
//
// The operators' states are read from the keys at every step, so a new
// assignor honours them: a cordoned member (Member.Cordon) keeps what it
// holds and is given nothing new; a frozen fleet (P/freeze) starts no
// hand-off, only placements of free shards; a worker stopped with
// Config.RejoinGrace (Member.RejoinUntil) keeps its assignment, its shards
// idle, until the grace ends, and gets exactly those shards back if it
// joins again within it. A worker keeps an operator's cordon, as it keeps a
// drain, when it writes its member key again, and carries it over when it
// joins under an ID whose key has one.
//
// # Load
//
// When the fleet's balance policy says so (shard.BalancePolicy, changed
// live with shardctl balance, or proposed by Config.LoadBalance for a
// fleet that stores none) the assignor balances load rather than shard
// counts (docs/operations.md, "Balancing load"), and asks every worker
// for its loads in its assignment. A
// handler reports its shard's load with Claim.ReportLoad, or the worker
// derives it from the claim's accepted commits per second; each figure is
// smoothed (Config.LoadHalfLife) and written to the worker's loads key,
// P/loads/<id> (shard.Members.ReportLoad; snapshots show it as
// shard.Member.Load), sampled every Config.LoadReportEvery and written
// only when the worker's total, or one shard as a part of it, moved by more
// than 5 %; a shard whose load jumps to a new level (beyond 1.5 × or ÷ its
// smoothed figure, or out of its own noise: meter.isShift) is taken at
// that level at once and written within a second, once per interval. The member key is never rewritten for loads, so a report cannot
// overwrite an operator's drain or cordon. The assignor takes each shard's
// figure from its holder's loads, keeps the last one seen for a shard that just
// moved, multiplies by Config.ShardWeight, and counts a shard with no
// figure as the mean. A worker not asked for loads (and without a report
// interval) writes none and runs no load timer: a count-balanced fleet
// is exactly as before.
package worker
