// Package natstest starts a real nats-server process with JetStream for
// tests and for cmd/shardbench: one per caller, on a free loopback port,
// its store in a temporary directory, its log in a file whose tail is
// printed when the test fails.
//
// The binary is <module root>/bin/nats-server (built by
// scripts/nats-server.sh at the version go.mod pins) or the file named by
// $SHARDLEASE_NATS_SERVER. The server runs in its own process group and
// dies with the test binary (Pdeathsig).
//
// What it guarantees: when Start or Launch returns, the server accepts
// client connections and JetStream answers.
//
// How it fails: a missing binary or a server that does not come up is a
// t.Fatal (Start) or an error (Launch) naming the cause and the fix. It
// never skips: integration tests must not pass by not running, with or
// without CI=true or SHARDLEASE_REQUIRE_CONSUL=1.
package natstest
