// Package pipeline is the stream processor of examples/jetstream, in pieces
// that the example's story and shardbench's stream-e2e scenario share: the
// log (one JetStream stream, one subject per partition), the producer, the
// handler that applies a partition's events to PostgreSQL, its state
// (Windows: windowed aggregates, their rebuild from the stream, and the
// standby side of Stateful that keeps them warm), and the proofs that
// read both back.
//
// The mapping it rests on: partition p of the stream is shard p of the
// fleet (the p-th of shard.Config.IDs), its events are the messages on
// subject orders.<p> (three digits), and the shard's committed offset is
// the stream sequence of the last event of that partition whose effect is
// in PostgreSQL (0: none yet). An owner reads its partition with an ordered
// consumer from that sequence + 1, and applies each batch inside
// postgres.Store.FencedTx: the effect rows and the new offset in one
// transaction, which commits only if no newer owner has fenced the shard.
// Delivery is at least once (a new owner re-reads what the old one read
// but did not commit); effects are exactly once.
//
// What it does not guarantee: anything about a stream whose messages are
// removed under it (purged, or aged out by limits) — an owner then resumes
// at the first sequence still there, and the proof reports the missing
// events as gaps. See docs/operations.md.
package pipeline
