package pgtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/harness/tb"
	"github.com/shardlease/shardlease/internal/pgserver"
)

// The package's shared cluster: started by the first Shared, stopped by
// Main.
var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns the cluster shared by the tests of this package, starting
// it on first use. The package's TestMain must call Main, which stops it.
// If it could not start, every caller fails with the same message.
func Shared(t tb.T) *Server {
	t.Helper()
	shared.once.Do(func() { shared.srv, shared.err = Launch() })
	if shared.err != nil {
		t.Fatalf("pgtest: %v", shared.err)
	}
	return shared.srv
}

// Main runs the package's tests, then stops and removes the shared cluster,
// and returns the exit code for os.Exit. A TestMain that also checks for
// leaked goroutines does so after Main returns, once the cluster (and the
// goroutine that waits for it) is gone.
func Main(m tb.Runner) int {
	code := m.Run()
	if shared.srv != nil {
		if err := shared.srv.Close(); err != nil {
			fmt.Printf("pgtest: stopping the shared cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// NewDatabase creates a database with a fresh name, returns its DSN, and
// drops it on t.Cleanup (connections still open to it are terminated).
func (s *Server) NewDatabase(t tb.T) string {
	t.Helper()
	name := "t_" + pgserver.RandomHex(6)
	s.Exec(t, "postgres", "CREATE DATABASE "+name)
	t.Cleanup(func() {
		if !s.Running() {
			return // stopped by the test; its directory goes with it
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Server.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return s.DSN(name)
}

// Exec runs sql in database db as the superuser; an error fails t.
func (s *Server) Exec(t tb.T, db, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Server.Exec(ctx, db, sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}
