// Package lincheck checks an offsets.Store for linearizability with
// porcupine: many goroutines fence, commit and load with interleaved
// tokens, every call and return is recorded on one shared clock, and
// porcupine searches for a sequential order, consistent with real time,
// in which every result matches this model of one shard:
//
//   - state: the checkpoint (offset, the token that wrote it, floor);
//   - Commit(t, off): if t < floor it must be rejected as stale and
//     changes nothing; else it must succeed and the state becomes
//     (off, t, t);
//   - Fence(t): if t < floor, rejected as stale; else it succeeds and the
//     floor becomes t;
//   - Load: returns exactly the state.
//
// Shards are independent, so the history is partitioned by shard and each
// part checked on its own (linearizability is compositional).
//
// Where offsetstest/history.Check checks necessary conditions of the fence
// (no stale write accepted, the final state explained), lincheck checks the
// whole contract, loads included: a Load that misses an acknowledged commit,
// or a rejection no earlier write explains, fails it too.
//
// It is for tests only (porcupine is a test dependency): import it from
// _test.go files. It fails through t and never calls t.Fatal off the test
// goroutine. When a history is not linearizable it writes porcupine's HTML
// visualisation to a temporary file and names it in the failure.
package lincheck
