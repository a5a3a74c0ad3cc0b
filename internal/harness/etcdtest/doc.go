// Package etcdtest starts real etcd servers for tests (offsets/etcd's
// today; the etcd engine's conformance, chaos and benchmark runs next): a
// single member (Start) and a cluster of members on loopback
// (StartCluster) whose Raft leader can be found, killed and started again.
//
// The binary is <module root>/bin/etcd (built by scripts/etcd.sh from the
// Go module proxy, go.etcd.io/etcd/server/v3 at the version the script
// pins) or the file named by $SHARDLEASE_ETCD. Each member listens on
// 127.0.0.1 only, on ports drawn free below the kernel's ephemeral range,
// keeps its data in a temporary directory and its log in a file whose tail
// is printed when the test fails, runs in its own process group and dies
// with the test binary (Pdeathsig).
//
// What it guarantees: when Start or StartCluster returns, every member
// answers /health as healthy, which etcd does only once a leader is
// elected and the member has applied its entries up to it.
//
// How it fails: a missing binary or a member that does not come up is a
// t.Fatal naming the cause and the fix. It never skips: integration tests
// must not pass by not running. A start whose member exits at once (a port
// taken between the pick and the bind) is tried again on fresh ports.
//
// It talks to etcd over its HTTP gateway (/health, /v3/...), so that the
// harness itself needs no etcd client.
package etcdtest
