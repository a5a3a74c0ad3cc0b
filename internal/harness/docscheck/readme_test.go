package docscheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// normalized is s's lines with their indentation and runs of spaces
// reduced to one space, blank lines dropped: gofmt aligns comments by
// tabs in Go and the README by spaces.
func normalized(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestReadmeHandlerIsRun: the handler of the README's library snippet, from
// "Handler:" to its closing "}),", is word for word the one
// worker's ExampleHandlerFunc_readme runs, so the README's code is
// compiled and run by go test.
func TestReadmeHandlerIsRun(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "..", "worker", "example_readme_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	handler := func(name string, text string) []string {
		lines := normalized(text)
		for i, l := range lines {
			if strings.HasPrefix(l, "Handler: worker.HandlerFunc(") {
				for j := i; j < len(lines); j++ {
					if lines[j] == "})," {
						return lines[i : j+1]
					}
				}
			}
		}
		t.Fatalf("%s has no handler from \"Handler: worker.HandlerFunc(\" to \"}),\"", name)
		return nil
	}
	want, got := handler("README.md", string(readme)), handler("worker/example_readme_test.go", string(example))
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("the README's handler and the example's differ:\nREADME:\n%s\nexample:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}
