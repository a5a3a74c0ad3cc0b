package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scenario is one benchmark: what `--scenario NAME` runs.
type Scenario struct {
	Name, Summary string
	// Run measures the scenario on env and returns its rows; with an
	// error, the rows measured before it.
	Run func(ctx context.Context, env *Env) ([]Result, error)
}

// Suite is every scenario a command has, in the order `--scenario all`
// runs and prints them.
type Suite []Scenario

// Find returns the scenario of that name.
func (s Suite) Find(name string) (Scenario, bool) {
	i := slices.IndexFunc(s, func(sc Scenario) bool { return sc.Name == name })
	if i < 0 {
		return Scenario{}, false
	}
	return s[i], true
}

// Select resolves --scenario: "all", or comma-separated names.
func (s Suite) Select(spec string) (Suite, error) {
	if spec == "all" {
		return s, nil
	}
	var out Suite
	for _, name := range strings.Split(spec, ",") {
		sc, ok := s.Find(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("--scenario %q: unknown scenario %q; want all or some of %s",
				spec, strings.TrimSpace(name), strings.Join(s.Names(), ", "))
		}
		out = append(out, sc)
	}
	return out, nil
}

// Names lists the scenarios' names in order.
func (s Suite) Names() []string {
	names := make([]string, len(s))
	for i, sc := range s {
		names[i] = sc.Name
	}
	return names
}

// rank is name's place in the suite; an unknown name ranks last.
func (s Suite) rank(name string) int {
	if i := slices.IndexFunc(s, func(sc Scenario) bool { return sc.Name == name }); i >= 0 {
		return i
	}
	return len(s)
}

// Run runs every scenario of s on env, in order, and adds to rep what each
// measured, how long it took and, if it failed, why. A failed scenario
// does not stop the others; the end of ctx does.
func (s Suite) Run(ctx context.Context, env *Env, rep *Report) {
	for _, sc := range s {
		env.Logf("shardbench: %s: %s", sc.Name, sc.Summary)
		began := time.Now()
		rows, err := sc.Run(ctx, env)
		rep.Results = append(rep.Results, rows...)
		rep.Scenarios = append(rep.Scenarios, ScenarioRun{Name: sc.Name, Seconds: time.Since(began).Seconds()})
		if err != nil {
			env.Logf("shardbench: %s failed after %v: %v", sc.Name, time.Since(began).Round(time.Millisecond), err)
			rep.Errors = append(rep.Errors, ScenarioError{Scenario: sc.Name, Error: err.Error()})
			if ctx.Err() != nil {
				break
			}
			continue
		}
		env.Logf("shardbench: %s done in %v", sc.Name, time.Since(began).Round(time.Millisecond))
	}
}

// Declare makes the scenario name: run with the parameters sizes holds for
// the run's size (Sizes.For).
func Declare[P any](name, summary string, sizes Sizes[P], run func(ctx context.Context, env *Env, p P) ([]Result, error)) Scenario {
	return Scenario{Name: name, Summary: summary, Run: func(ctx context.Context, env *Env) ([]Result, error) {
		return run(ctx, env, sizes.For(env))
	}}
}
