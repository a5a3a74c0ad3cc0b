// Package pipeline is the stream processor of examples/jetstream, in pieces
// that the example's story and shardbench's stream-e2e scenario share: the
// log (one JetStream stream, one subject per partition), the producers
// (Produce, and Keyed: keyed events, with a switch of layouts), the
// handler that applies a partition's events to PostgreSQL and closes it at
// its marker for a reshard, its state (Windows: windowed aggregates, their
// rebuild from the stream, and the standby side of Stateful that keeps
// them warm), and the proofs that read both back.
//
// The mapping it rests on: partition p of the stream is one shard of the
// fleet (Handler.Partition), its events are the messages on subject
// orders.<p> (three digits), and the shard's committed offset is the
// stream sequence of the last message of that partition whose effect is
// in PostgreSQL (0: none yet). Partition numbers run on across layouts: a
// stream of 64 partitions resharded to 128 has partitions 0…63 (the
// parents' subjects) and 64…191 (the children's), as a resharded fleet's
// shards have indexes of their own (shard.Segment.Base). An owner reads
// its partition with an ordered consumer from that sequence + 1, and
// applies each batch inside postgres.Store.FencedTx: the effect rows and
// the new offset in one transaction, which commits only if no newer owner
// has fenced the shard. Delivery is at least once (a new owner re-reads
// what the old one read but did not commit); effects are exactly once.
//
// A reshard (see close.go): the producer ends each partition it leaves
// with a marker; the partition's owner applies it, and closes the shard
// there once the fleet tells it to (worker.Claim.Closing). A key's events
// keep their order across the switch because a child starts only once its
// parents closed, which ProveKeys checks rather than assumes, from the
// snapshots PostgreSQL gave the transactions that applied them.
//
// What it does not guarantee: anything about a stream whose messages are
// removed under it (purged, or aged out by limits) — an owner then resumes
// at the first sequence still there, and the proof reports the missing
// events as gaps. Nor the end of a partition without a marker: an owner
// told to close it keeps reading until one comes, so a fleet resharded
// before its producer switched waits for the switch. See
// docs/operations.md.
package pipeline
