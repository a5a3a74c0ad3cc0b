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
//     delete, a delete-check-and-set, a delete-tree), and Client, its
//     implementation over a *api.Client. Its in-memory twin, with Consul's
//     semantics for those calls, is a test's and lives under the harness
//     (internal/harness/consulkvtest). Sessions and agent calls (checks,
//     services) are shard/consul's alone and stay on its *api.Client.
//   - Dial: the *api.Client built from a Connection (pooled transport,
//     unix sockets dialled through the transport WrapTransport wraps, no
//     gzip to a local agent).
//   - Classify: what a failed call means (unavailable, refused as
//     malformed, permission, outcome unknown for a write whose answer did
//     not come back); ClassifyRefusal: why one operation of a rolled-back
//     transaction failed.
//   - Batches: transactions of at most MaxTxnOps operations (and a byte
//     budget); DefaultRequestTimeout and
//     WithRequestTimeout, whose context cause tells the request timeout
//     from the caller's own end.
//
// # Guarantees
//
//   - Txn sends one /v1/txn and reads the HTTP status: a committed
//     transaction returns its results, a rolled-back one (HTTP 409)
//     Consul's per-operation errors and a nil error, anything else an
//     error that Classify reads. More than MaxTxnOps operations are refused
//     before anything is sent (TooManyOps).
//
// # What it does not guarantee
//
// Nothing here retries: retry policies are the backends' (a store may
// retry what was provably not applied; a coordinator reports and lets its
// worker back off).
//
// # How it fails
//
// Errors are Consul's own (api.StatusError, transport errors); the
// backends turn them into their sentinels through Classify, naming the
// operation, the agent's address and the wrong value.
package consulkv
