// Package recovery holds the lost-history test: a fleet of `shardd worker`
// processes whose offsets (in a real PostgreSQL) have floors above 10^6,
// on real Consul agents that know nothing of that history, recovered with
// admin.Operator.Recover (what `shardctl recover` runs) twice: once on a
// Consul whose index is far below the floors, and once after that Consul
// is replaced by one rebuilt empty while one worker stays attached to the
// old one. It checks what the runbook promises: every shard owned again
// within 30 s of the recovery, no stale commit accepted (the worker left
// on the old Consul keeps running its shards and is refused), no offset
// back, and no instant of two processes on one shard while the fleet has
// one coordinator.
//
// The package has no code outside its test.
package recovery
