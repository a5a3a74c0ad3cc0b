package fleetkeys

import (
	"strings"
	"testing"
)

func TestPrefixProblem(t *testing.T) {
	for prefix, want := range map[string]string{
		"shardlease/orders": "",
		"":                  "prefix is empty",
		"/fleet":            `prefix "/fleet" must not`,
		"fleet/":            `prefix "fleet/" must not`,
		"my fleet":          `prefix "my fleet" must not`,
		"bad\xff":           "valid UTF-8",
		"nul\x00":           "without NUL",
	} {
		got := PrefixProblem(prefix)
		if (want == "") != (got == "") || (want != "" && !strings.Contains(got, want)) {
			t.Errorf("PrefixProblem(%q) = %q, want %q", prefix, got, want)
		}
	}
}
