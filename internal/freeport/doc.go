// Package freeport picks loopback ports for servers that tests start in
// child processes (Consul agents, nats-server, PostgreSQL), which must be
// told their port on the command line and so cannot listen on port 0.
//
// Pick draws ports at random outside the kernel's ephemeral port range
// (/proc/sys/net/ipv4/ip_local_port_range) and keeps those it could bind
// on 127.0.0.1 for TCP and for UDP a moment before. Outside that range,
// because the source port of every outgoing connection on the machine
// comes from it: a port handed out by listening on 127.0.0.1:0 and closing
// lies inside it, and any connection may take it before the server binds
// it (a CI run lost a Consul cluster that way). At random, so that test
// processes running at once rarely draw the same ports.
//
// What it guarantees: distinct ports, in [10000, 65535], that were free for
// TCP and UDP on 127.0.0.1 when checked, and none inside the ephemeral
// range when at least 1024 ports lie outside it (above 10000). Pick is safe
// for concurrent use.
//
// What it does not guarantee: that a port is still free when the server
// binds it. Another process that binds a chosen port (another test's
// server that drew the same one) can still take it, so a caller retries a
// start that fails to bind, with fresh ports. On a machine whose ephemeral
// range leaves fewer than 1024 ports outside it, Pick draws from all of
// [10000, 65535] and outgoing connections can take its ports too.
//
// The picker that tests of those retries rig (a port the test holds handed
// out as if another process had taken it) is internal/harness/freeporttest's:
// this package is linked into programs (through internal/pgserver) and holds
// no test code.
//
// How it fails: an error when too few of the ports drawn were free (50
// draws per port wanted), quoting the last bind failure. When the range
// cannot be read, Linux's default (32768–60999) is assumed.
package freeport
