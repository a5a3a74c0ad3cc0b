// Package etcd is an offsets.Store in etcd: each shard's checkpoint is one
// key, P/offsets/<shard>, holding the JSON record every key-value store
// writes (offsets.EncodeRecord), so `etcdctl get` shows an operator what is
// there.
//
// The atomic step is etcd's: a write reads the key, applies the fencing
// rule (offsets.ApplyFence, offsets.ApplyCommit) and writes the result in
// a transaction that compares the key's ModRevision with the one it read
// (or, for a key that did not exist, that it still does not); if someone
// wrote in between, the transaction does nothing and the key is read and
// the rule applied again. A Load is a linearizable read (etcd's default).
// So the token check and the write are one step, as offsets.Store
// requires, whichever store or process wrote last.
//
// Errors: a read that fails is offsets.ErrUnavailable (nothing was
// written; retry as is). A write whose request may have reached etcd (the
// connection broke, the context ended, the server answered with an error
// other than a refusal it makes before applying anything) is
// offsets.ErrOutcomeUnknown; one etcd refused before applying it (no
// leader, too many requests) is offsets.ErrUnavailable. A value that is
// not a record, or breaks the rule, is offsets.ErrCorrupt: that shard's
// reads and writes fail, naming the key, until an operator repairs it.
//
// The store uses the caller's *clientv3.Client (Config.Client), which it
// never closes: a process keeps one client for all it does in etcd.
package etcd
