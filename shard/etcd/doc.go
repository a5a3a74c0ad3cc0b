// Package etcd is shard.Coordinator on etcd v3: the same fleet, keys and
// values as shard/consul (internal/fleetkeys reads both), with etcd's
// leases, transactions and watches underneath.
//
// # Sessions
//
// A session is a lease and a key attached to it, P/sessions/<id> (the
// lease ID in hexadecimal), holding the worker's name, TTL and
// lock-delay. Renew is one keep-alive of the lease. The lease's TTL is
// the session's rounded up to whole seconds; etcd raises one below its
// minimum (1.5 election timeouts, 2 s on a default cluster) to it. When
// the lease ends — it expired, Destroy revoked it, or anyone revoked it
// with etcdctl — etcd deletes the key in the same step, and the session
// has ended for good: lease IDs are not granted twice.
//
// # Keys a session holds
//
// etcd deletes a lease's keys when it ends, but a lock's key must outlive
// its holder (its token history, the lock-delay it opens, the owner it
// names), as a member key must (an operator's drain or cordon). So the
// keys a session holds — shard locks, role locks such as P/assignor,
// member keys, report keys — are plain keys whose value is an envelope,
// {"session", "lock_delay_ms", "value"}, and a key is held while the
// session it names has its key. Every write a holder makes is a
// transaction that compares the session's key (still the one created)
// and the written key's revision as read. A lock whose envelope cannot be
// read (written by hand) is held by nobody known: no session can take it
// until an operator deletes it. A member or report key in that state is
// dead, and its worker's next Join writes it again.
//
// # Tokens
//
// A lock's token is the revision of the transaction that took it (with
// the fleet's generation above it, shard.MakeToken): etcd's revisions
// are global and only grow, so a lock's tokens grow across holders and
// across deletes of its key. Each acquiring transaction also compares
// P/config's revision, so the generation in the token is the stored one.
//
// # Lock-delay, which etcd has not
//
// A lock whose holder's session ended is taken by another session only a
// lock-delay (the holder's, recorded in the lock) after the acquiring
// coordinator first knew the session had ended: when it found the
// session's key missing and etcd confirmed the lease gone (or revoked a
// lease whose key had been deleted by hand, see below). That moment is at
// or after the session's end, so the next owner starts at least a
// lock-delay after the end, as on Consul; it may start later (by the time
// the next owner takes to look, and after a coordinator restart, which
// forgets what it knew, by up to a whole lock-delay).
//
// The no-overlap rule then holds as docs/design.md argues it for Consul:
// a worker acts until TTL − PauseBudget after the start of its last
// successful renewal; an expiry comes at least a TTL after the last
// keep-alive etcd received (a new etcd leader extends every lease), so
// after the worker's deadline; a revoke by a third party comes after the
// last renewal began, so the worker's deadline is at most TTL −
// PauseBudget ≤ LockDelay after it, and the next owner waits a
// lock-delay after it.
//
// A session key deleted by hand while its lease lives is the session's
// end: whoever finds it so (an acquirer, the session's own next write)
// revokes the lease, and the lock-delay counts from then.
//
// # Watches
//
// Locks.Watch, Members.Watch and Assignments.Watch read their key (and
// the holder's session key) and wait on an etcd watch of those keys from
// the revision after the caller's index: a key's index is the revision
// of its last change, as Consul's index of one key is. Fleet.Watch reads
// the fleet from a mirror kept by one watch of the prefix, which receives
// changes, not the prefix again; a compacted history or a failed watch
// makes it read the prefix whole again. Keys under P/offsets/ (the
// offsets store's) arrive on that watch too and are dropped.
package etcd
