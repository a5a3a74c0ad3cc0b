package admin

import "errors"

// Sentinel errors. Operations wrap them with %w and the value that was
// wrong; compare with errors.Is. A coordinator's own failure keeps its
// shard sentinel (shard.ErrUnavailable, shard.ErrPermissionDenied, ...)
// in the chain, and a failed write also wraps ErrWrite.
var (
	// ErrNoFleet: there is no valid config key under the prefix, so there
	// is no fleet to act on (a wrong prefix, or a config edited by hand).
	// The error is a *NoFleetError.
	ErrNoFleet = errors.New("admin: no fleet")
	// ErrUnknownWorker: no member key has this worker ID.
	ErrUnknownWorker = errors.New("admin: unknown worker")
	// ErrUnknownZone: no live worker is in this zone.
	ErrUnknownZone = errors.New("admin: no live worker in zone")
	// ErrWorkerDead: the worker's member key has no session; it owns
	// nothing and its shards were already taken over.
	ErrWorkerDead = errors.New("admin: worker is dead")
	// ErrLastWorker: draining this worker would leave no live worker that
	// is not draining, so its shards would have nowhere to go.
	ErrLastWorker = errors.New("admin: the only live worker not draining")
	// ErrLastUncordoned: cordoning this worker would leave no live worker
	// that is neither cordoned nor draining; the assignor ignores cordons
	// then, so the cordon would do nothing.
	ErrLastUncordoned = errors.New("admin: the only live worker neither cordoned nor draining")
	// ErrNoOperator: the Operator has no By, and a cordon or a freeze
	// records who set it.
	ErrNoOperator = errors.New("admin: no operator name to record (Operator.By)")
	// ErrWorkerRestarting: the worker changed sessions under every attempt
	// to set or clear its drain or cordon.
	ErrWorkerRestarting = errors.New("admin: worker keeps changing sessions")
	// ErrWorkerLeft: the worker's session ended while its drain was
	// followed; the others take over what it held.
	ErrWorkerLeft = errors.New("admin: worker left the fleet")
	// ErrDrainWithdrawn: the drain being followed was withdrawn.
	ErrDrainWithdrawn = errors.New("admin: drain withdrawn")
	// ErrDrainUnfinished: the context ended before the drain finished;
	// the drain stays set. It also wraps the context's cause.
	ErrDrainUnfinished = errors.New("admin: drain unfinished")
	// ErrUnknownShard: the shard is not one of the fleet's shards.
	ErrUnknownShard = errors.New("admin: unknown shard")
	// ErrShardFree: no session holds the shard, so there is nothing to
	// release.
	ErrShardFree = errors.New("admin: shard is free")
	// ErrShardMoved: the shard is no longer held as the caller saw it
	// (another session or token), so it is not released: the caller
	// confirmed the release of an owner that no longer has it.
	ErrShardMoved = errors.New("admin: shard changed hands")
	// ErrOwnerGone: the owner's session ended before the release, so the
	// shard is free already.
	ErrOwnerGone = errors.New("admin: owner's session ended")
	// ErrNotTaken: the context ended before another worker took the
	// released shard. It also wraps the context's cause.
	ErrNotTaken = errors.New("admin: shard not taken yet")
	// ErrShardHeld: the shard key is held by a session; DeleteShard does
	// not delete a lock under its holder.
	ErrShardHeld = errors.New("admin: shard key is held")
	// ErrNoShardKey: there is no such key under the fleet's prefix.
	ErrNoShardKey = errors.New("admin: no such shard key")
	// ErrStepMissing: a live worker does not speak a protocol step the
	// operation needs (shard.Member.Steps); the error names it.
	ErrStepMissing = errors.New("admin: a live worker lacks a protocol step")
	// ErrWrite marks a coordinator write that failed (as opposed to a
	// read); the coordinator's error is in the chain beside it.
	ErrWrite = errors.New("admin: write failed")
)
