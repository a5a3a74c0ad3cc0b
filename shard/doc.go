// Package shard is the vocabulary shared by every part of shardlease: shard
// identifiers, fencing tokens, claims, the lease policy and its rule, the fleet
// configuration, and the Coordinator interface that the embedded coordinator
// (shard/memory) and the Consul coordinator (shard/consul) implement.
//
// What it guarantees: a Token is the coordinator's write index of the acquiring
// write, so for one shard tokens strictly increase across every change of owner,
// including after an operator deleted the lock key. A LeasePolicy that passes
// Validate leaves room for two renewal attempts and the stated pause budget
// inside one TTL.
//
// An assignor epoch is likewise the write index of the write that took
// P/assignor, so epochs strictly increase across assignors, and the
// coordinator refuses an Assign of any session but the holder at its
// epoch (ErrNotAssignor). An assignment is advice: ownership is the
// shard's lock and nothing else.
//
// What it does not guarantee: that a lease is still held. A holder that was
// paused or partitioned may believe it owns a shard after the coordinator has
// handed it to someone else; only a store that checks the Token (package
// offsets) makes such a holder's writes harmless.
//
// The package depends on the standard library only.
package shard
