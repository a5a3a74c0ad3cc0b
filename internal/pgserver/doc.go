// Package pgserver starts a real, throwaway PostgreSQL cluster from the
// installed binaries: for programs that need a database and may not assume
// one (examples/jetstream's `go run` on a fresh clone, cmd/shardbench), and
// under internal/harness/pgtest for tests.
//
// A cluster is made the way an operator would by hand: initdb into a new
// temporary directory, then postgres on a free loopback port with its unix
// sockets in that directory, superuser "postgres" with a random password
// (password authentication over TCP; trust on the unix socket). initdb and
// postgres refuse to run as root, so when the program runs as root both run
// as the "postgres" user (the Debian package creates it), by setting the
// child's credentials, not through su.
//
// The binaries are taken from $SHARDLEASE_PG_BIN if set, else from the
// newest /usr/lib/postgresql/*/bin (Debian's layout), else from PATH.
// scripts/postgres.sh installs them.
//
// What it guarantees: when Launch returns, the server accepts password
// connections on Server.Port, loopback only. The server runs in its own
// process group and dies with this process (Pdeathsig), so a killed program
// leaves no server behind; Close removes the directory.
//
// What it does not do: tune the server for anything but short-lived use
// (fsync stays on; initdb runs with --no-sync), or keep its data.
//
// How it fails: a missing PostgreSQL, a missing postgres user, or a server
// that does not come up is an error naming the cause and the fix (Fix).
package pgserver
