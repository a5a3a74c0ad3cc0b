// Package pgtest starts real, throwaway PostgreSQL clusters for tests.
//
// Start gives one test its own cluster, stopped and removed on t.Cleanup;
// Shared gives every test of a package one cluster, started on first use and
// stopped by Main after the package's tests ran. A test that needs a clean
// slate on a shared cluster takes a fresh database (Server.NewDatabase).
// Launch and Server.Close do the same outside a test, for programs (the
// benchmarks of cmd/shardbench); failures are returned, not t.Fatal.
//
// A cluster is made the way an operator would by hand: initdb into a new
// temporary directory, then postgres on a free loopback port with its unix
// sockets in that directory, superuser "postgres" with a random password
// (password authentication over TCP, so tests can present a wrong one;
// trust on the unix socket). initdb and postgres refuse to run as root, so
// when the test runs as root both run as the "postgres" user (the Debian
// package creates it), by setting the child's credentials, not through su.
//
// The binaries are taken from $SHARDLEASE_PG_BIN if set, else from the
// newest /usr/lib/postgresql/*/bin (Debian's layout), else from PATH.
// scripts/postgres.sh installs them.
//
// What it guarantees: when Start or Shared returns, the server accepts
// password connections on Server.Port. The server runs in its own process
// group and dies with the test binary (Pdeathsig), so a killed test leaves
// no server behind; the directory is removed on stop.
//
// How it fails: a missing PostgreSQL, a missing postgres user, or a server
// that does not come up is a t.Fatal naming the cause and the fix. It never
// skips: integration tests must not pass by not running.
package pgtest
