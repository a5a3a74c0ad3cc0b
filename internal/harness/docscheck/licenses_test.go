package docscheck_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateLicenses = flag.Bool("update-licenses", false, "rewrite docs/licenses.md from the modules the commands link")

// allowedLicenses are the licences a dependency linked into a shipped
// command may have: permissive ones, and MPL-2.0 (file-level: its files'
// sources stay available, which the module proxy does).
var allowedLicenses = []string{"Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "MIT", "MPL-2.0"}

// licenseOf names the licence of the module in dir from its licence file,
// or says why it cannot.
func licenseOf(dir string) (string, error) {
	for _, name := range []string{"LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING", "LICENCE"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		text := strings.Join(strings.Fields(string(b)), " ")
		switch {
		case strings.Contains(text, "Apache License") && strings.Contains(text, "Version 2.0"):
			return "Apache-2.0", nil
		case strings.Contains(text, "Mozilla Public License Version 2.0") || strings.Contains(text, "Mozilla Public License, version 2.0"):
			return "MPL-2.0", nil
		case strings.Contains(text, "Permission is hereby granted, free of charge"):
			return "MIT", nil
		case strings.Contains(text, "Permission to use, copy, modify, and/or distribute") || strings.Contains(text, "Permission to use, copy, modify, and distribute"):
			return "ISC", nil
		case strings.Contains(text, "Redistribution and use in source and binary forms") && strings.Contains(text, "Neither the name"):
			return "BSD-3-Clause", nil
		case strings.Contains(text, "Redistribution and use in source and binary forms"):
			return "BSD-2-Clause", nil
		}
		return "", fmt.Errorf("%s: a licence this check does not recognise", name)
	}
	return "", fmt.Errorf("no licence file")
}

// TestDependencyLicenses: every module linked into shardd and shardctl has
// a licence from allowedLicenses, and docs/licenses.md lists exactly those
// modules with their licences (go test ./internal/harness/docscheck
// -update-licenses rewrites it after a dependency change, for review).
func TestDependencyLicenses(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}",
		"github.com/shardlease/shardlease/cmd/shardd", "github.com/shardlease/shardlease/cmd/shardctl").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var rows []string
	for _, line := range slices.Compact(slices.Sorted(slices.Values(strings.Split(strings.TrimSpace(string(out)), "\n")))) {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		lic, err := licenseOf(f[2])
		if err != nil {
			t.Errorf("%s %s: %v", f[0], f[1], err)
			continue
		}
		if !slices.Contains(allowedLicenses, lic) {
			t.Errorf("%s %s is %s, not one of %v", f[0], f[1], lic, allowedLicenses)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", f[0], f[1], lic))
	}
	doc := `# Third-party licences

shardlease is Apache-2.0 (LICENSE). The modules linked into ` + "`shardd`" + ` and ` + "`shardctl`" + `,
with their licences, as read from each module's licence file by
` + "`internal/harness/docscheck`" + `'s TestDependencyLicenses (which also refuses a licence
outside ` + strings.Join(allowedLicenses, ", ") + `). The Consul server the tests build into
` + "`bin/consul`" + ` (MPL-2.0 source, v1.14.8) and nats-server are test tools: they are not linked
into anything shardlease ships.

| module | version | licence |
|---|---|---|
` + strings.Join(rows, "\n") + "\n"
	path := filepath.Join("..", "..", "..", "docs", "licenses.md")
	if *updateLicenses {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != doc {
		t.Errorf("docs/licenses.md is not the list of the commands' dependencies (%v); run go test ./internal/harness/docscheck -run TestDependencyLicenses -update-licenses and review the diff", err)
	}
}
