// Package consultest starts real Consul agents for tests: a fresh
// single-server dev agent per test (StartDev), and a three-server cluster on
// loopback whose Raft leader can be found, killed and restarted (StartCluster),
// with client agents joined to it as production has one per host
// (Cluster.StartClients), which a fault harness can freeze, kill, make leave
// and bring back from its own goroutines (Agent.Signal, Leave, Relaunch).
//
// The binary is <module root>/bin/consul (built by scripts/consul.sh) or the
// file named by $SHARDLEASE_CONSUL. Every agent listens on 127.0.0.1 only, on
// ports drawn at random below the kernel's ephemeral port range (where no
// outgoing connection takes them) and found free at start; a start in which
// an agent exits or fails to bind anyway (another test process took the
// port) is tried again on fresh ports, three times in all. An agent keeps
// its data in t.TempDir() and its log in a file whose tail is printed when
// the test fails. It runs in its own process
// group and is killed (the whole group) on t.Cleanup; it also dies with the
// test binary (Pdeathsig), so a crashed test leaves no agent behind.
//
// What it guarantees: when StartDev, StartCluster or StartClients returns, a
// leader is elected, the HTTP API answers, and every node's serfHealth check
// is in the catalog, so sessions can be created at once.
//
// How it fails: a missing binary or an agent that does not become ready is a
// t.Fatal naming the cause and the fix, always; when every attempt of a start
// failed, it names each attempt's failed agent and quotes its log's bind
// error. Ports are not re-drawn when a killed agent is restarted (Restart,
// Relaunch): it must come back at its old addresses, and fails if one was
// taken meanwhile. Integration tests must not
// skip silently, so there is no skip path, whether or not CI=true or
// SHARDLEASE_REQUIRE_CONSUL=1 is set.
package consultest
