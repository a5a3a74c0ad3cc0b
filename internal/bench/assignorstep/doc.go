// Package assignorstep is shardbench's assignor-step scenario: the
// assignor's decision, rebalance.Step, timed in this process (no Consul) at
// the size of its goals, 1,000 workers over 100,000 shards, in three states:
// cold (nothing held or assigned: every shard placed), steady (balanced:
// nothing to write, the step on every wake-up), join (one member more than
// steady) and leave (one fewer: its shards orphaned).
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: the states are built from a seeded random fleet,
// settled by stepping as workers would act, and read back as the assignor
// reads them; every run is preceded by a collection, so no run pays for the
// garbage of the one before.
//
// How it fails: a Step that errs, or a fleet that does not settle within
// ten rounds, ends the scenario with the error.
package assignorstep
