// Package consulkvtest is the in-memory twin of internal/consulkv's KV:
// Consul's KV and transaction semantics for the calls shard/consul and
// offsets/consul make, so that their unit tests run without an agent. It is
// test infrastructure; no shipped binary links it.
//
// # What it guarantees
//
// The twin applies a transaction's operations in order on a copy of its
// state and keeps the copy only if none failed; every operation that failed
// is reported with Consul's own text (so a get after a failed lock of a
// missing key fails too, and consulkv.ClassifyRefusal reads each). Its index
// starts at 1, never 0; a committed write transaction moves it by one, and
// every key it wrote gets that index. Blocking queries wait for the key's
// (or the prefix's) own writes, as Consul's do. More than
// consulkv.MaxTxnOps operations are refused as Consul refuses them (HTTP
// 413). Its conformance test runs the same cases against a real agent, so
// the twin cannot drift from Consul unnoticed.
//
// # What it does not guarantee
//
// The twin has no lock-delay, no session TTLs and no ACL system beyond Deny
// (writes under a prefix refused as Consul refuses them).
//
// # How it fails
//
// As Consul does, with Consul's errors (api.StatusError); faults are
// injected with FailNext: a call that fails before it reaches the store, or
// a write applied whose answer was lost.
package consulkvtest
