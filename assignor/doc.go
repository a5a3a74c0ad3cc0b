// Package assignor runs the fleet's assignor role: one worker at a time
// lists the fleet, decides with rebalance.Step (the pure step) and writes
// every worker's assignment key. Every worker of a fleet runs an
// Assignor beside its shards (package worker does it), campaigning for
// shard.AssignorLock with its own session: the role is a lock like a
// shard's, its token is the assignor's epoch, and it dies with its
// worker's session.
//
// # What a worker's key says
//
// The key (shard.Assignment) says only what a worker needs: its shards,
// the free ones and why each was given to it, and why each shard it
// holds and no longer has is taken from it — one shard.Reason per shard,
// from Step's decision (Transfer.Reason) to the worker's release, the
// lock's value and every view. What the step must remember about a worker
// between steps (when its set last changed, how long it has waited on
// shards it was given, a stuck verdict, when its shards arrived, since
// when its load is out of the band) is the assignor's own memory, written
// beside the key in the same transaction, in this package's versioned
// format, and never shown to the worker.
//
// # What is guaranteed
//
// A write is the assignor's word or nothing: each transaction is refused
// by the coordinator unless the session holds the role at the epoch, and
// a key and its memory are written together, so that a key edited by hand
// — however well formed, whatever epoch it names — reads as not sealed
// (shard.Unsealed). Its worker keeps what it runs and starts nothing on
// it; the assignor treats the worker as without a key and writes its key
// and memory afresh in its next step, from what the worker holds. An
// assignment is advice: ownership is the shard's lock, and the fence.
//
// A new assignor carries on from the listing alone; what it keeps in
// memory between steps is pacing only (a cold fleet's gathering, the last
// load figure seen for a shard that just moved), which a new assignor
// rebuilds at the cost of a short delay.
//
// # What is not guaranteed
//
// That every worker reads its key promptly: a worker that lags behind its
// key, or one that cannot take what it is given, is judged stuck after
// StuckAfter and given nothing new under that session. A memory this
// version cannot read is treated as none: the worker is judged afresh.
//
// # How it fails
//
// New returns an error naming every wrong field. Run retries every
// failure of the coordinator with jittered backoff and returns only when
// its context ends or its session is gone; a refused write ends the
// worker's lead (it was deposed) and it campaigns again.
package assignor
