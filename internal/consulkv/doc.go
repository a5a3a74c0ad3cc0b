// Package consulkv is the one Consul layer under shard/consul and
// offsets/consul: the KV and transaction calls both make, one way to
// send a transaction, one reading of what a failure means, one chunker
// and one prefix rule, so that the two backends cannot disagree about
// Consul.
//
// # What it owns
//
//   - KV, a small interface mirroring exactly the KV calls the backends
//     make (a /v1/txn transaction, a get, a list, a check-and-set, a
//     delete, a delete-check-and-set, a delete-tree), with two
//     implementations: Client over a *api.Client, and Twin, in memory,
//     with Consul's semantics for those calls, for unit tests without an
//     agent. Sessions and agent calls (checks, services) are shard/consul's
//     alone and stay on its *api.Client.
//   - Dial: the *api.Client built from a Connection (pooled transport,
//     unix sockets dialled through the transport WrapTransport wraps, no
//     gzip to a local agent).
//   - Classify: what a failed call means (unavailable, refused as
//     malformed, permission, outcome unknown for a write whose answer did
//     not come back); ClassifyRefusal: why one operation of a rolled-back
//     transaction failed.
//   - Batches: transactions of at most MaxTxnOps operations (and a byte
//     budget); ValidPrefix: the KV prefix rule; DefaultRequestTimeout and
//     WithRequestTimeout, whose context cause tells the request timeout
//     from the caller's own end.
//
// # Guarantees
//
//   - Txn sends one /v1/txn and reads the HTTP status: a committed
//     transaction returns its results, a rolled-back one (HTTP 409)
//     Consul's per-operation errors and a nil error, anything else an
//     error that Classify reads. More than MaxTxnOps operations are refused
//     before anything is sent.
//   - The twin applies a transaction's operations in order on a copy of
//     its state and keeps the copy only if none failed; every operation
//     that failed is reported, as Consul does (so a get after a failed lock
//     of a missing key fails too). Its index starts at 1; a committed write
//     transaction moves it by one, and every key it wrote gets that index.
//     Its conformance test runs the same cases against a real agent.
//
// # What it does not guarantee
//
// The twin has no lock-delay, no session TTLs and no ACL system beyond
// Deny (writes under a prefix refused as Consul refuses them); faults are
// injected with FailNext. Nothing here retries: retry policies are the
// backends' (a store may retry what was provably not applied; a
// coordinator reports and lets its worker back off).
//
// # How it fails
//
// Errors are Consul's own (api.StatusError, transport errors) or the
// twin's equivalents; the backends turn them into their sentinels through
// Classify, naming the operation, the agent's address and the wrong value.
package consulkv
