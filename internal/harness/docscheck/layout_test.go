package docscheck_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/shardlease/shardlease"

// goList runs `go list` from the module root with args and returns its
// output lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(gobin, append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Join("..", "..", "..")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v\n%s", args, err, stderr)
	}
	return strings.Fields(string(out))
}

// layoutPackages returns the package paths docs/design.md's "Layout"
// section names: the first backquoted path of each list item.
func layoutPackages(t *testing.T) []string {
	t.Helper()
	_, section, ok := strings.Cut(docFile(t, "design.md"), "\n## Layout\n")
	if !ok {
		t.Fatal(`docs/design.md has no "## Layout" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	item := regexp.MustCompile("(?m)^- `([a-z0-9_./-]+)`")
	var pkgs []string
	for _, m := range item.FindAllStringSubmatch(section, -1) {
		pkgs = append(pkgs, m[1])
	}
	return pkgs
}

// TestLayoutMatchesTheTree: the Layout section of docs/design.md names
// every package of the module once, and nothing else, so a reader can
// trust it as the map of the tree.
func TestLayoutMatchesTheTree(t *testing.T) {
	var tree []string
	for _, p := range goList(t, "./...") {
		tree = append(tree, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
	}
	documented := layoutPackages(t)
	seen := map[string]bool{}
	for _, p := range documented {
		if seen[p] {
			t.Errorf("docs/design.md's Layout lists %s twice", p)
		}
		seen[p] = true
		if !slices.Contains(tree, p) {
			t.Errorf("docs/design.md's Layout lists %s, which `go list ./...` does not have", p)
		}
	}
	for _, p := range tree {
		if !seen[p] {
			t.Errorf("package %s is missing from docs/design.md's Layout", p)
		}
	}
}

// TestEveryPackageSaysWhatItOwns: each package has a doc comment.
func TestEveryPackageSaysWhatItOwns(t *testing.T) {
	for _, line := range goList(t, "-f", "{{.ImportPath}}:{{if .Doc}}doc{{else}}none{{end}}", "./...") {
		if p, doc, _ := strings.Cut(line, ":"); doc != "doc" {
			t.Errorf("package %s has no doc comment (a doc.go saying what it owns)", p)
		}
	}
}

// TestHarnessStaysOutOfTheProduct: shardd and shardctl link nothing under
// internal/harness (the test harnesses), and no package outside it imports
// it but shardbench's (cmd/shardbench and internal/bench/…, which start
// their own Consul and PostgreSQL); the library imports from internal/
// only what docs/design.md's Layout allows.
func TestHarnessStaysOutOfTheProduct(t *testing.T) {
	harness := module + "/internal/harness/"
	libraryMayUse := []string{module + "/internal/consulkv", module + "/internal/keycodec", module + "/internal/fleetkeys", module + "/internal/reqcount", module + "/internal/fleetview", module + "/internal/backoff", module + "/internal/lease",
		module + "/internal/logging", module + "/internal/history"}
	isLibrary := func(p string) bool {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		return !strings.HasPrefix(rel, "internal/") && !strings.HasPrefix(rel, "cmd/") && !strings.HasPrefix(rel, "examples/")
	}
	for _, cmd := range []string{"./cmd/shardd", "./cmd/shardctl"} {
		for _, dep := range goList(t, "-deps", cmd) {
			if strings.HasPrefix(dep, harness) {
				t.Errorf("%s links %s", cmd, dep)
			}
		}
	}
	for _, line := range goList(t, "-f", `{{.ImportPath}}:{{join .Imports ","}}`, "./...") {
		p, imports, _ := strings.Cut(line, ":")
		if strings.HasPrefix(p, harness) || p == module+"/cmd/shardbench" || p == module+"/internal/bench" || strings.HasPrefix(p, module+"/internal/bench/") {
			continue
		}
		for _, imp := range strings.Split(imports, ",") {
			if strings.HasPrefix(imp, harness) {
				t.Errorf("%s imports %s outside its tests", p, imp)
			}
			if isLibrary(p) && strings.HasPrefix(imp, module+"/internal/") && !slices.Contains(libraryMayUse, imp) {
				t.Errorf("library package %s imports %s; docs/design.md's Layout allows it only %v", p, imp, libraryMayUse)
			}
		}
	}
}
