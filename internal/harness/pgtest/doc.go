// Package pgtest starts real, throwaway PostgreSQL clusters for tests.
//
// Start gives one test its own cluster, stopped and removed on t.Cleanup;
// Shared gives every test of a package one cluster, started on first use and
// stopped by Main after the package's tests ran. A test that needs a clean
// slate on a shared cluster takes a fresh database (Server.NewDatabase).
// Launch and Server.Close do the same outside a test; failures are
// returned, not t.Fatal.
//
// The cluster itself is internal/pgserver's (how it is made, where the
// binaries are found, how it runs as root): this package adds only the
// test's side — cleanups, the shared cluster, failing instead of returning
// errors. Password authentication over TCP lets tests present a wrong one.
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
