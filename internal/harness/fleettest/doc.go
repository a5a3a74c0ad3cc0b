// Package fleettest holds the multi-process fleet tests on a real Consul:
// `shardd worker` processes (the built binary) over one fleet, killed with
// SIGKILL, stopped with SIGTERM, and run through a Raft leader kill on a
// three-server cluster, while a separate client checks every snapshot of
// the fleet's keys and, afterwards, the handler intervals each process
// logged.
//
// The package has no code outside its tests. The tests start their own
// Consul agents (internal/harness/consultest) and fail, never skip, when Consul is
// missing.
package fleettest
