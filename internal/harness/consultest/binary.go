package consultest

import (
	"os"

	"github.com/shardlease/shardlease/internal/harness/shardproc"
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
	return shardproc.LocateBinary(EnvBinary, "consul", "`bash scripts/consul.sh` (or `make consul`)")
}

// ModuleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func ModuleRoot() (string, error) { return shardproc.ModuleRoot() }

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
