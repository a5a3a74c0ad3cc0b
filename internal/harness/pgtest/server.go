package pgtest

import (
	"fmt"

	"github.com/shardlease/shardlease/internal/harness/tb"
	"github.com/shardlease/shardlease/internal/pgserver"
)

// Superuser is the cluster's superuser; Server.Password is its password.
const Superuser = pgserver.Superuser

// EnvBinDir names an environment variable that, when set, is the directory
// holding initdb and postgres.
const EnvBinDir = pgserver.EnvBinDir

// Server is one throwaway cluster (internal/pgserver), with the calls a
// test makes on it failing the test instead of returning errors.
type Server struct {
	*pgserver.Server
}

// Start gives the test its own cluster, stopped (fast shutdown) and removed
// on t.Cleanup.
func Start(t tb.T) *Server {
	t.Helper()
	s, err := Launch()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgtest: last lines of %s:\n%s", s.LogPath(), s.LogTail(30))
		}
		if err := s.Close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return s
}

// Launch makes, starts and waits for a new cluster outside a test (a
// benchmark program's, say); the caller stops and removes it with Close.
// On error nothing is left behind. As with Start, the server dies with this
// process even if Close is never called.
func Launch() (*Server, error) {
	s, err := pgserver.Launch()
	if err != nil {
		return nil, fmt.Errorf("%w; integration tests require PostgreSQL and never skip", err)
	}
	return &Server{s}, nil
}

// Stop shuts the server down the way `pg_ctl stop -m fast` does and waits
// for it; the data directory stays, so Restart can bring it back.
func (s *Server) Stop(t tb.T) {
	t.Helper()
	if err := s.Server.Stop(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// Kill stops the server at once with SIGKILL, as a crash would: the next
// start runs crash recovery from the WAL.
func (s *Server) Kill(t tb.T) {
	t.Helper()
	s.Server.Kill()
}

// Restart starts a stopped or killed server again on the same port and data
// directory and waits until it accepts connections.
func (s *Server) Restart(t tb.T) {
	t.Helper()
	if err := s.Server.Restart(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}
