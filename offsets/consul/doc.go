// Package consul is the offsets.Store in Consul KV, for fleets whose only
// shared system is the Consul that already holds their locks.
//
// # What it guarantees
//
// The offsets rule (see package offsets). Shard s's checkpoint is one key,
// P/offsets/<s>, holding a small JSON record:
//
//	{"v":1,"offset":120,"token":7,"floor":7}
//
// The token check and the write are one atomic step: the store applies the
// rule to the checkpoint as of a ModifyIndex and writes the result with a
// CAS on that index (a /v1/txn "cas" operation; index 0 means "only if the
// key does not exist"). If anyone wrote the key in between, Consul refuses
// the CAS, the store reads the key again and applies the rule again, with
// jittered backoff after repeated conflicts: a conflict costs a retry, never
// a commit. Because Consul orders all writes through Raft, no write with a
// lower token can land after one with a higher token was accepted.
//
// Each store remembers the last checkpoint and ModifyIndex it saw per shard,
// so the usual commit (one owner committing its own shard) is a single CAS
// round trip. The memory is only a guess: a CAS on an index that moved
// fails and is retried from a fresh read, and a refusal decided from memory
// is sound because a shard's floor never goes down. Load always reads, in
// consistent mode, so it reflects every write acknowledged before it.
// CommitBatch sends up to 128 CAS operations per transaction.
//
// A write that returned nil has been committed by the Consul servers' Raft
// quorum.
//
// # Connecting
//
// Config.Connection carries the same connection settings as a
// shard/consul.Config (its Connection method returns them), so a process
// whose coordinator is on Consul opens its store with the same address,
// token, TLS and transport wrapper; the store builds its own client and
// pool from them. Config.Client takes a client the caller built instead.
// The Consul calls themselves, their transaction limit, the reading of
// failures and the request timeout are internal/consulkv's, shared with
// shard/consul.
//
// # What it does not guarantee
//
// Consul KV is not a database: each accepted write is a Raft entry, so
// throughput is bounded by the cluster's commit latency; keep commits to a
// few per second per shard (the worker's default). Values of keys that are
// not offsets records are never overwritten, but the store cannot stop an
// operator deleting a key (which resets its floor: do not).
//
// # How it fails
//
//   - New: no agent named (neither Config.Client nor
//     Config.Connection.Address), a bad scheme or prefix, or a negative
//     timeout wraps shard.ErrInvalidArgument. New sends nothing.
//   - the errors of package offsets, with the same wording; after Close,
//     offsets.ErrClosed. Shard IDs that are not valid UTF-8, contain NUL or
//     are longer than MaxShardLen wrap shard.ErrInvalidArgument.
//   - ErrUnavailable, ErrOutcomeUnknown and ErrCorrupt are package
//     offsets' sentinels under this package's names: errors.Is matches
//     either.
//   - ErrUnavailable: the agent could not be reached or the cluster had no
//     leader; nothing was written. Requests that provably did not reach
//     Consul are retried three times with backoff first.
//   - ErrOutcomeUnknown: a write was sent and no usable answer came back
//     (connection broken, context ended, server error while applying). It
//     may have been applied. Never reported as success or as stale.
//   - ErrPermissionDenied: the ACL token lacks key_prefix P/offsets/ write.
//   - ErrCorrupt: the key holds something that is not an offsets record,
//     or a record that breaks the rule; that shard fails until an operator
//     repairs it, and the value is never overwritten.
//   - a context done before the call: its error and cause, nothing sent.
//     Every call is also bounded by Config.RequestTimeout.
package consul
