package main

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// A run of some scenarios (not all) with --docs updates the document
// instead of replacing it: its scenarios' rows replace theirs in the JSON
// beside the document, and the other scenarios keep the rows of the run
// that measured them. Each scenario's rows, baselines included, still come
// from one run, so every ratio compares figures measured side by side; the
// section names every scenario measured by another run than the first,
// with its commit and start. A full run (every scenario) starts afresh.

// mergeRun returns the report --docs writes for rep, given the one already
// beside the document (old; ok false when there is none): rep itself when
// it ran every scenario or nothing was there before, else old with rep's
// scenarios replaced.
func mergeRun(old report, ok bool, rep report) (report, error) {
	if !ok || ranEveryScenario(rep) {
		return rep, nil
	}
	if old.Small != rep.Small {
		return report{}, fmt.Errorf("this run is %s but the document's is %s: a run updates a document of its own kind (remove its JSON to start afresh)",
			smallWord(rep.Small), smallWord(old.Small))
	}
	ran := map[string]bool{}
	for _, s := range rep.Scenarios {
		ran[s.Name] = true
	}
	out := old
	out.Scenarios, out.Results, out.Errors = nil, nil, nil
	for _, s := range old.Scenarios {
		if ran[s.Name] {
			continue
		}
		if s.Commit == "" && s.Started.IsZero() {
			s.Commit, s.Started = old.Commit, old.Started
		}
		out.Scenarios = append(out.Scenarios, s)
	}
	for _, s := range rep.Scenarios {
		s.Commit, s.Started = rep.Commit, rep.Started
		out.Scenarios = append(out.Scenarios, s)
	}
	order := scenarioOrder()
	slices.SortStableFunc(out.Scenarios, func(a, b scenarioRun) int { return order(a.Name) - order(b.Name) })
	for _, r := range old.Results {
		if !ran[r.Scenario] {
			out.Results = append(out.Results, r)
		}
	}
	out.Results = append(out.Results, rep.Results...)
	slices.SortStableFunc(out.Results, func(a, b result) int { return order(a.Scenario) - order(b.Scenario) })
	for _, e := range old.Errors {
		if !ran[e.Scenario] {
			out.Errors = append(out.Errors, e)
		}
	}
	out.Errors = append(out.Errors, rep.Errors...)
	return out, nil
}

// readOldRun reads the report at path for mergeRun: ok false when there
// is none.
func readOldRun(path string) (report, bool, error) {
	old, err := readReport(path)
	if errors.Is(err, fs.ErrNotExist) {
		return report{}, false, nil
	}
	return old, err == nil, err
}

// ranEveryScenario reports whether rep ran every scenario shardbench has.
func ranEveryScenario(rep report) bool {
	for _, s := range scenarios {
		if !slices.ContainsFunc(rep.Scenarios, func(r scenarioRun) bool { return r.Name == s.name }) {
			return false
		}
	}
	return true
}

// scenarioOrder ranks scenario names in the order `--scenario all` runs
// them; an unknown name ranks last.
func scenarioOrder() func(string) int {
	return func(name string) int {
		if i := slices.IndexFunc(scenarios, func(s benchScenario) bool { return s.name == name }); i >= 0 {
			return i
		}
		return len(scenarios)
	}
}

func smallWord(small bool) string {
	if small {
		return "a --small run"
	}
	return "a full-size run"
}

// rerunSince names the scenarios measured by another run than the
// report's own (Commit, Started), with theirs, for the section's header;
// "" when there are none.
func (r report) rerunSince() string {
	var parts []string
	for _, s := range r.Scenarios {
		if (s.Commit == "" || s.Commit == r.Commit) && (s.Started.IsZero() || s.Started.Equal(r.Started)) {
			continue
		}
		p := fmt.Sprintf("%s (started %s UTC", s.Name, s.Started.UTC().Format("2006-01-02 15:04"))
		if s.Commit != "" {
			p += fmt.Sprintf(" at commit `%s`", s.Commit)
		}
		parts = append(parts, p+")")
	}
	if len(parts) == 0 {
		return ""
	}
	return "Measured by later runs of some scenarios, each with its own baselines: " + strings.Join(parts, ", ") + "."
}
