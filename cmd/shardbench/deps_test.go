package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestShippedBinariesDoNotLinkTesting: the commands are shipped binaries;
// none of them may link package testing (its flags and its init would come
// with it). shardbench starts Consul and PostgreSQL through the test
// launchers, which therefore take an interface of their own, not a
// testing.TB.
func TestShippedBinariesDoNotLinkTesting(t *testing.T) {
	for _, cmd := range []string{"shardbench", "shardd", "shardctl"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/shardlease/shardlease/cmd/"+cmd).Output()
		if err != nil {
			t.Fatalf("go list -deps cmd/%s: %v", cmd, err)
		}
		if slices.Contains(strings.Fields(string(out)), "testing") {
			t.Errorf("cmd/%s links package testing", cmd)
		}
	}
}
