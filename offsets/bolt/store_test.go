package bolt_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/bolt"
	"github.com/shardlease/shardlease/offsets/offsetstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openAt returns an OpenFunc for the file at path.
func openAt(path string) offsetstest.OpenFunc {
	return func(tb testing.TB) offsets.Store {
		tb.Helper()
		st, err := bolt.Open(path)
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
}

// open opens a store in a new file.
func open(tb testing.TB) offsets.Store {
	return openAt(filepath.Join(tb.TempDir(), "offsets.db"))(tb)
}

func TestConformance(t *testing.T) { offsetstest.Run(t, open) }

func TestDurable(t *testing.T) {
	offsetstest.RunDurable(t, func(tb testing.TB) offsetstest.OpenFunc {
		return openAt(filepath.Join(tb.TempDir(), "offsets.db"))
	})
}

func BenchmarkStore(b *testing.B) { offsetstest.Benchmark(b, open) }

func TestSecondOpener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.db")
	first, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Close() })

	start := time.Now()
	second, err := bolt.Open(path)
	if err == nil {
		_ = second.Close()
		t.Fatal("a second Open of a file in use succeeded")
	}
	if !errors.Is(err, bolt.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open: %v; want ErrLocked naming %s", err, path)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("second Open took %v to fail", waited)
	}

	// Once the first lets go, the file opens again.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	_ = third.Close()
}

func TestOpenFailures(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "not-a-db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a bbolt file\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"not a database":    notDB,
		"missing directory": filepath.Join(dir, "missing", "offsets.db"),
		"a directory":       dir,
	} {
		t.Run(name, func(t *testing.T) {
			st, err := bolt.Open(path)
			if err == nil {
				_ = st.Close()
				t.Fatalf("Open(%s) succeeded", path)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name %s", err, path)
			}
		})
	}
}
