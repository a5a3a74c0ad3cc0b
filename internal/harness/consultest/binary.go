package consultest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shardlease/shardlease/internal/harness/tb"
)

// EnvBinary names an environment variable that, when set, is the path of the
// consul binary to use instead of <module root>/bin/consul.
const EnvBinary = "SHARDLEASE_CONSUL"

// Binary returns the path of the consul binary, or fails the test with what
// to do about it. Missing Consul is never a reason to skip.
func Binary(t tb.T) string {
	t.Helper()
	path, err := FindBinary()
	if err != nil {
		t.Fatalf("consultest: %v%s", err, requiredNote())
	}
	return path
}

// FindBinary returns the path of the consul binary: $SHARDLEASE_CONSUL, else
// <module root>/bin/consul. The error says how to build it.
func FindBinary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("$%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "consul")
	if err := executable(p); err != nil {
		return "", fmt.Errorf("consul binary %s: %w; build it with `bash scripts/consul.sh` (or `make consul`), or set $%s",
			p, err, EnvBinary)
	}
	return p, nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// ModuleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: cannot locate bin/consul")
		}
		dir = parent
	}
}

// requiredNote explains, in a failure message, why the test fails instead of
// skipping.
func requiredNote() string {
	switch {
	case os.Getenv("CI") == "true":
		return " (CI=true: integration tests require Consul)"
	case os.Getenv("SHARDLEASE_REQUIRE_CONSUL") == "1":
		return " (SHARDLEASE_REQUIRE_CONSUL=1)"
	default:
		return " (integration tests require Consul and never skip)"
	}
}
