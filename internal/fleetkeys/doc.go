// Package fleetkeys reads a fleet's keys the same way on every
// coordinator engine (shard/consul, shard/etcd): the key names under the
// fleet's prefix, the values' formats, the seal of an assignment, the
// fleet config a listing is read against, and the decoding of a whole
// listing into a shard.Snapshot, with every key it cannot read listed as a
// problem.
//
// An engine turns what it stores into Pairs (a key, its value, the
// engine's modify index and the session holding it) and keeps the rest —
// how sessions hold keys, transactions, watches — to itself.
package fleetkeys
