package pgtest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

func query(t *testing.T, dsn, sql string) string {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// A cluster of its own: it answers, keeps data across a fast stop and a
// crash, and leaves neither process nor directory behind.
func TestStartStopRestart(t *testing.T) {
	var dir string
	t.Run("cluster", func(t *testing.T) {
		s := pgtest.Start(t)
		dir = s.Dir
		t.Logf("%s on port %d in %s", s.Version, s.Port, s.Dir)
		dsn := s.NewDatabase(t)
		if got := query(t, dsn, "SELECT current_user"); got != pgtest.Superuser {
			t.Fatalf("current_user = %q", got)
		}
		s.Exec(t, dbName(dsn), "CREATE TABLE k (v text); INSERT INTO k VALUES ('kept')")

		s.Stop(t)
		if s.Running() {
			t.Fatal("running after Stop")
		}
		s.Restart(t)
		if got := query(t, dsn, "SELECT v FROM k"); got != "kept" {
			t.Fatalf("after restart: %q", got)
		}

		s.Kill(t)
		s.Restart(t) // crash recovery
		if got := query(t, dsn, "SELECT v FROM k"); got != "kept" {
			t.Fatalf("after a crash: %q", got)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after cleanup: %v", dir, err)
	}
	if out, _ := exec.Command("pgrep", "-f", "postgres -D "+dir).Output(); len(out) > 0 {
		t.Errorf("postgres still running after cleanup: pids %s", out)
	}
}

func dbName(dsn string) string {
	db := dsn[strings.LastIndex(dsn, "/")+1:]
	return db[:strings.Index(db, "?")]
}

// The shared cluster is one per package, and a wrong password is refused
// (password authentication is on, so tests of bad credentials mean
// something).
func TestShared(t *testing.T) {
	s := pgtest.Shared(t)
	if again := pgtest.Shared(t); again != s {
		t.Fatal("Shared started a second cluster")
	}
	bad := strings.Replace(s.DSN("postgres"), s.Password, "wrong", 1)
	conn, err := pgx.Connect(t.Context(), bad)
	if err == nil {
		conn.Close(context.Background())
		t.Fatal("a wrong password was accepted")
	}
	if !strings.Contains(err.Error(), "password authentication failed") {
		t.Fatalf("wrong password: %v", err)
	}
}

// Launch and Close, for programs: a cluster that answers, and nothing left
// behind once closed.
func TestLaunchAndClose(t *testing.T) {
	s, err := pgtest.Launch()
	if err != nil {
		t.Fatal(err)
	}
	if got := query(t, s.DSN("postgres"), "SELECT current_user"); got != pgtest.Superuser {
		t.Errorf("current_user = %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Error("running after Close")
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Close: %v", s.Dir, err)
	}
}
