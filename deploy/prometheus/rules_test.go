package prometheus

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// exported reads the names of the metrics a worker exports from
// worker/metrics*.go: each counter("x", …), gauge("x", …) and Name: "x",
// as shardlease_x.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "worker", "metrics*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the worker's metrics files: %v, %v", files, err)
	}
	names := map[string]bool{}
	def := regexp.MustCompile(`(?:counter|gauge)\("([a-z_]+)"|Name: *"([a-z_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range def.FindAllStringSubmatch(string(b), -1) {
			names["shardlease_"+m[1]+m[2]] = true
		}
	}
	return names
}

// TestAlertRules: the rules parse as promtool check rules parses them
// (unknown fields refused, every expression valid PromQL), every alert
// has a severity and a description naming its runbook, and every
// shardlease_ metric they use is one a worker exports.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile("shardlease-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	p := parser.NewParser(parser.Options{})
	groups, errs := rulefmt.Parse(b, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("shardlease-alerts.yml: %v", err)
	}
	if len(errs) > 0 {
		return
	}
	have := exported(t)
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if r.Labels["severity"] == "" || !strings.Contains(r.Annotations["description"], "docs/") {
				t.Errorf("%s: want a severity label and a description that names its runbook", r.Alert)
			}
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Alert, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok && strings.HasPrefix(vs.Name, "shardlease_") && !have[vs.Name] {
					t.Errorf("%s uses %s, which no worker exports", r.Alert, vs.Name)
				}
				return nil
			})
		}
	}
	if alerts < 4 {
		t.Errorf("%d alerts, want at least the four of docs/operations.md's quickstart", alerts)
	}
}
