// Package bolt is the embedded, durable offsets.Store: one bbolt file per
// store, for a worker (or a fleet on one machine) that keeps its offsets on
// local disk.
//
// # What it guarantees
//
// The offsets rule (see package offsets). Each Fence and Commit is one bbolt
// read-write transaction that reads the shard's checkpoint, applies the rule
// and writes the result, so the check and the write are one atomic step, and
// bbolt serialises writers. A transaction that returns nil has been fsync'd:
// the checkpoint and its floor survive a crash of the process or the machine.
// A Fence or Commit that changes nothing (an equal fence, the same offset
// again) writes nothing and costs no fsync.
//
// The file holds one bucket, "offsets"; the key is the shard ID and the value
// a 25-byte record: a version byte (1), then offset, token and floor as
// big-endian 64-bit integers.
//
// # What it does not guarantee
//
// Sharing. bbolt locks the file, so one process at a time may open it; a
// fleet spread over machines needs a shared backend (Consul, PostgreSQL).
// Throughput is bounded by the disk's fsync latency, since every accepted
// change is its own transaction. A context is checked before the transaction
// starts; a transaction waiting for bbolt's writer lock cannot be cancelled.
//
// # How it fails
//
//   - Open: ErrLocked, naming the path, when another Store (in this process
//     or another) holds the file for longer than one second; otherwise the
//     file system's or bbolt's error, naming the path.
//   - a stored value that is not a valid record: an error wrapping ErrCorrupt
//     that names the shard. Reads and writes of that shard fail until an
//     operator repairs it; other shards are unaffected. It never panics.
//   - the errors of package offsets; after Close, offsets.ErrClosed.
//   - an I/O error during a transaction: the transaction is rolled back and
//     the error returned wrapped with the shard; nothing was written.
package bolt
