// Package admin holds the operator's actions on a running fleet: drain and
// undrain a worker, cordon and uncordon one, freeze and unfreeze the
// fleet's rebalancing, force a shard free, delete a shard key left by a
// hand edit, and recover a fleet whose coordinator lost its history. It
// is what shardctl drain, undrain, cordon, uncordon, freeze, unfreeze,
// release, delete-shard and recover call; any Go program with a shard.Coordinator for the fleet can do the
// same. It prints nothing: operations return typed results and errors
// wrapping this package's sentinels, and the ones that wait (FollowDrain,
// WaitNextOwner) report progress through callbacks.
//
// An Operator acts through the sessions a listing shows, not its own: a
// drain rewrites the worker's member key with the worker's session, a
// release unlocks the shard with its holder's session. It holds no
// session, so it leaves nothing behind if it stops halfway. A freeze is
// the one key it writes itself, with no session: it must outlive the
// operator's process and every assignor.
//
// The rules, and why:
//
//   - Drain refuses a worker with no member key (ErrUnknownWorker), one
//     whose key has no session (ErrWorkerDead: it owns nothing, its shards
//     were taken over already), the last live worker not draining
//     (ErrLastWorker: the assignor ignores drains when every worker
//     drains, so its shards would have nowhere to go), and one whose
//     drain would leave only cordoned or draining workers (ErrLastWorker
//     too: a cordoned worker is given nothing new). Undrain refuses the
//     first two. Neither writes when the worker is already in the state
//     asked for.
//   - Cordon and Freeze record who set them (Operator.By, required:
//     ErrNoOperator), when and why, in the key the assignor reads, so the
//     state survives an assignor's failover and any display can say who
//     to ask. Cordon refuses unknown and dead workers as Drain does, and
//     the last live worker neither cordoned nor draining
//     (ErrLastUncordoned: the assignor ignores cordons when nobody is left
//     to take shards). Freezing a frozen fleet, unfreezing one not
//     frozen, and cordoning a cordoned worker write nothing and say so
//     (Changed false, with the mark in force).
//   - Release refuses a free shard (ErrShardFree), and releases only the
//     holder the caller saw and confirmed: a shard that changed hands
//     since is refused (ErrShardMoved), not taken from its new owner.
//     Fencing is what keeps a release safe: the old holder's writes carry
//     its token, which the offset store refuses once the next owner has
//     fenced with its higher one.
//   - DeleteShard refuses a key held by a session (ErrShardHeld): a lock
//     is released, never deleted under its holder, so the holder is told
//     and the reason is recorded. It deletes only a free key of one of
//     the fleet's shards or a key outside the config that the listing
//     reports, and refuses keys outside the config while any of them is
//     held (running workers use another config: restore it instead).
//   - Recover raises the fleet's generation only when a store floor is
//     above what the coordinator can grant (or when forced), and refuses
//     while a live worker does not speak the generations step
//     (ErrStepMissing): it could own nothing afterwards. It is never
//     automatic: with two coordinators live (an old one some workers still
//     reach), raising the new one's generation is what fences the old one
//     out, and only an operator knows which one the fleet is to keep.
//
// What it guarantees: every refusal is decided from a listing taken by the
// call itself, and a refused call writes nothing. A coordinator's failure
// keeps its shard sentinel in the chain; a failed write also wraps
// ErrWrite, so a caller can tell a read it may not make from a write.
//
// What it does not guarantee: that the fleet still looks as the listing
// showed when the write lands. A drain written just as the worker
// restarts is retried (twice) and then ErrWorkerRestarting. (DeleteShard
// is the exception: the coordinator refuses, in the delete itself, a key a
// session acquired after the listing.) A drain is a request: FollowDrain
// ends with ErrDrainUnfinished when its context does, and the drain stays
// set. Following a fleet lists its whole prefix, at most four times a
// second (fleetview.MinSpacing).
//
// How it fails: a prefix without a valid config key is a *NoFleetError
// (ErrNoFleet); coordinator errors are returned wrapped, never retried by
// the one-shot operations; the following ones pass each failed listing to
// the caller's onError (RetryTransient by default).
package admin
