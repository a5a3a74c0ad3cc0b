// Package keycodec is the stored form of the keys of protocol 3
// (docs/design.md, "Key schema"): a set of shards as compact index ranges
// ("0-99,150,152-160"), the value of an assignment key
// (P/assign/<worker>/shards) built on it, and the value of a worker's
// loads key (P/loads/<worker>). Both coordinators (shard/consul and
// shard/memory) and the assignor's memory of a worker (package assignor)
// encode and decode through it, so that no two of them can disagree about
// a value. It is internal because no user of the library reads or writes
// a key: the coordinators' API takes and returns shard's types.
//
// What it guarantees: an encoding is unique, so equal sets (and equal
// assignments) encode to equal bytes; what is encoded for a shard.Config
// decodes, for the same config, to what was encoded (sets in ascending
// order; an assignment without its Memory, which travels in a key of its
// own). A shard is named exactly as shard.Config.IDs names it. Decoders
// never panic, whatever the bytes.
//
// What it does not do: read or write a key, tell an assignor's write from
// a hand edit (shard.Unsealed is the coordinators' check, by modify
// index), or read any other protocol: a change to any format here is a
// protocol change.
//
// How it fails: a shard outside the config is refused with an error
// wrapping shard.ErrUnknownShard, any other bad argument or malformed set
// with one wrapping shard.ErrInvalidArgument; each names the offending
// value. A whole value that cannot be read (an assignment or loads value)
// is refused with an error saying what is wrong with it.
package keycodec
