package shard

import (
	"maps"
	"slices"
)

// Assignment is a worker's assignment key, P/assign/<worker>/shards: what
// the assignor wants the worker to own, and why each change. It says only
// what a worker needs; the assignor's own memory about the worker travels
// beside it (Memory) and is never shown to the worker. It is advice, never
// authority: a shard is owned by whoever holds its lock, whatever any
// assignment says. Only the assignor writes assignment keys
// (Assignments.Assign); each worker watches its own (Assignments.Watch).
type Assignment struct {
	// Epoch is the assignor epoch that wrote the key. Assign sets it.
	Epoch Token `json:"epoch"`
	// Shards are the shards assigned, in the config's order, each once.
	Shards []ID `json:"shards"`
	// Free are the shards of Shards that had no live holder in the listing
	// the assignor decided from, whose index is AsOf. A worker that runs
	// one of them under a claim whose token is at most AsOf has lost its
	// lock (an operator released or deleted it): it is how a worker that
	// reads nothing but this key learns of it.
	Free []ID   `json:"free,omitempty"`
	AsOf uint64 `json:"as_of,omitempty"`
	// Why says, for shards of Free, why each was given to the worker (the
	// worker records it in the lock's value when it takes the shard).
	Why map[ID]Why `json:"why,omitempty"`
	// Release says, for shards the worker holds that are not in Shards,
	// why each is taken from it: the reason it records when it releases
	// the lock. A held shard missing from both is released as
	// ReasonRebalance.
	Release map[ID]Why `json:"release,omitempty"`
	// Loads asks the worker to report its shards' loads
	// (Members.ReportLoad): the fleet balances load.
	Loads bool `json:"loads,omitempty"`
	// Standby are shards the worker is to prepare for (or back up) without
	// owning them: it runs its handler's standby side for each one it does
	// not hold, which never takes the lock and never commits. A shard in
	// both Shards and Standby is the worker's to own. An added field:
	// release 0.1.0 skips it.
	Standby []ID `json:"standby,omitempty"`
	// Close are shards of Shards the worker is to close for a reshard:
	// each is a parent, and its handler is told (worker.Claim.Closing) to
	// run to its end and close it (Claim.Close). An added field: release
	// 0.1.0 never runs a resharded fleet (it refuses protocol 4).
	Close []ID `json:"close,omitempty"`
	// Memory is what the assignor remembers about the worker, in the
	// assignor's own format (package assignor): written with the key in
	// the same transaction, listed in snapshots for the next assignor, and
	// never part of what Assignments.Watch gives the worker.
	Memory []byte `json:"-"`
}

// AssignmentKey is one assignment key as Assignments.Watch sees it.
type AssignmentKey struct {
	// Index is the blocking-query index to wait on next (see NextIndex).
	Index uint64
	// Exists is false when the key is missing (deleted, or never written).
	Exists bool
	// Assignment is the key's value (Memory empty). Valid only when Exists
	// and Problem is empty.
	Assignment Assignment
	// Problem is non-empty when the key exists but is not the assignor's
	// word: its value cannot be read as an assignment of this fleet, or it
	// was not written by an assignor's transaction (see Sealed). It says
	// what is wrong.
	Problem string
}

// Unsealed is the Problem of an assignment key whose value and memory
// were not written by one transaction: the value was written by hand
// (however well formed), or the memory was. Coordinators seal a key by
// writing it and its memory in one transaction, so that both carry the
// same modify index; a plain write of either moves only its own.
const Unsealed = "not written by an assignor (its value and the assignor's memory were not written together): an edit, not a decision"

// Clone returns a copy of a whose slices and maps the caller may change.
func (a Assignment) Clone() Assignment {
	a.Shards = slices.Clone(a.Shards)
	a.Free = slices.Clone(a.Free)
	a.Standby = slices.Clone(a.Standby)
	a.Close = slices.Clone(a.Close)
	a.Why = maps.Clone(a.Why)
	a.Release = maps.Clone(a.Release)
	a.Memory = slices.Clone(a.Memory)
	return a
}
