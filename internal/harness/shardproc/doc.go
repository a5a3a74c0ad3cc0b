// Package shardproc builds the shardd binary and runs it as child
// processes, for the multi-process tests (internal/harness/fleettest, and
// internal/harness/procfleet's fleets for internal/harness/chaos and
// shardbench): started with their output appended to a log file, the
// test's CONSUL_* settings kept out of their environment, killed with the
// test binary (Pdeathsig) if it dies first, and waited for by one goroutine
// per process that records when and how each exited. Launch starts any
// other child process the tests run (Consul agents, PostgreSQL servers)
// the same way. GroupMembers lists the processes left in process groups,
// for the tests of supervisors (cmd/shardd, worker/exec) that must prove a
// stopped child left nothing behind.
//
// It returns errors and never fails a test itself, so it may be used from
// any goroutine.
package shardproc
