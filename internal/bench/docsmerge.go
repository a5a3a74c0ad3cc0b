package bench

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
func mergeRun(old Report, ok bool, rep Report, suite Suite) (Report, error) {
	if !ok || ranEveryScenario(rep, suite) {
		return rep, nil
	}
	if old.Small != rep.Small {
		return Report{}, fmt.Errorf("this run is %s but the document's is %s: a run updates a document of its own kind (remove its JSON to start afresh)",
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
	slices.SortStableFunc(out.Scenarios, func(a, b ScenarioRun) int { return suite.rank(a.Name) - suite.rank(b.Name) })
	for _, r := range old.Results {
		if !ran[r.Scenario] {
			out.Results = append(out.Results, r)
		}
	}
	out.Results = append(out.Results, rep.Results...)
	slices.SortStableFunc(out.Results, func(a, b Result) int { return suite.rank(a.Scenario) - suite.rank(b.Scenario) })
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
func readOldRun(path string) (Report, bool, error) {
	old, err := ReadReport(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Report{}, false, nil
	}
	return old, err == nil, err
}

// ranEveryScenario reports whether rep ran every scenario of suite.
func ranEveryScenario(rep Report, suite Suite) bool {
	for _, s := range suite {
		if !slices.ContainsFunc(rep.Scenarios, func(r ScenarioRun) bool { return r.Name == s.Name }) {
			return false
		}
	}
	return true
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
func (r Report) rerunSince() string {
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
