// Package offsetstest is the conformance suite for offsets.Store. Every
// backend runs it from its own tests: the in-process ones against a temporary
// store, the network ones (Consul, PostgreSQL) against a real server.
//
//	func TestConformance(t *testing.T) {
//		offsetstest.Run(t, func(tb testing.TB) offsets.Store { return memory.New() })
//	}
//
// What it checks: every clause of the rule in package offsets, one scripted
// case each (stale commit and fence rejected with the checkpoint unchanged,
// equal token overwrites, higher token raises the floor, fence keeps the
// offset, unknown shard loads as zero, bad arguments rejected, shards
// independent); a done context and use after Close; and, under many
// goroutines with mixed tokens, that no stale write was ever accepted (see
// history.Check). RunDurable adds persistence across Close and reopen.
//
// What it does not check: performance (see Benchmark), nor behaviour under
// server faults, which each network backend tests on its own.
//
// The suite fails through t; it never calls t.Fatal from a goroutine.
package offsetstest
