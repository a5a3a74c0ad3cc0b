package benchtest

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
)

// numberRE is a number as the section prints it: digits, optionally with
// thousands commas and a decimal part, not glued to a word (p50, v669 and
// 25d6eec hold none).
var numberRE = regexp.MustCompile(`\b\d[\d,]*(?:\.\d+)?\b`)

// StrayNumbers returns the numbers of section that are no figure of rep.
//
// A number x printed with d decimals (commas dropped, sign ignored) is a
// figure of the run when some value v of the run, times 1, 1000, 1/1000
// (unit prefixes), 100 (a ratio as a percentage) or 1/60 (seconds as
// minutes), is x when rounded to d decimals; or when x is written in one of
// the run's texts (a metric's sizes such as 12 workers × 128 shards, a
// goal, a note, the machine, the commit). The values of the run are every
// row's p50, p99, max, trials and extra figures; the ratios, both ways, of
// p50, p99 and max between a shardlease row and the baselines it is
// compared with; the run's trials, cores, memory in GiB, its start's date
// and time, each scenario's seconds and their sum; and the counts of rows
// with a goal and of those that met it.
func StrayNumbers(section string, rep bench.Report) []string {
	texts := map[string]bool{}
	for _, s := range runTexts(rep) {
		for _, tok := range numberRE.FindAllString(s, -1) {
			texts[tok] = true
		}
	}
	values := runValues(rep)
	var stray []string
	for _, tok := range numberRE.FindAllString(section, -1) {
		if texts[tok] || isFigure(tok, values) {
			continue
		}
		stray = append(stray, tok)
	}
	return stray
}

func isFigure(tok string, values []float64) bool {
	plain := strings.ReplaceAll(tok, ",", "")
	for len(plain) > 1 && plain[0] == '0' && plain[1] != '.' {
		plain = plain[1:] // a date's 01
	}
	decimals := 0
	if _, frac, ok := strings.Cut(plain, "."); ok {
		decimals = len(frac)
	}
	for _, v := range values {
		for _, scale := range []float64{1, 1000, 1.0 / 1000, 100, 1.0 / 60} {
			if strconv.FormatFloat(math.Abs(v*scale), 'f', decimals, 64) == plain {
				return true
			}
		}
	}
	return false
}

// runTexts are the run's strings, whose numbers are its sizes and settings.
func runTexts(rep bench.Report) []string {
	m := rep.Machine
	texts := []string{rep.Commit, m.CPU, m.Kernel, m.OS, m.GoVersion, m.ConsulVersion, m.ConsulMode}
	for _, r := range rep.Results {
		texts = append(texts, r.Scenario, r.System, r.Metric, r.Unit, r.Policy, r.Goal, r.Note)
		texts = append(texts, slices.Sorted(maps.Keys(r.Extra))...)
	}
	for _, e := range rep.Errors {
		texts = append(texts, e.Scenario, e.Error)
	}
	return texts
}

// runValues are the run's figures, as StrayNumbers defines them.
func runValues(rep bench.Report) []float64 {
	started := rep.Started.UTC()
	gib, _ := strconv.ParseFloat(rep.Machine.MemoryGiB(), 64)
	vs := []float64{float64(rep.Trials), float64(rep.Machine.Cores), gib,
		float64(started.Year()), float64(started.Month()), float64(started.Day()), float64(started.Hour()), float64(started.Minute())}
	var total float64
	for _, s := range rep.Scenarios {
		vs, total = append(vs, s.Seconds), total+s.Seconds
		if at := s.Started.UTC(); !s.Started.IsZero() { // a later run of some scenarios, named with its start
			vs = append(vs, float64(at.Year()), float64(at.Month()), float64(at.Day()), float64(at.Hour()), float64(at.Minute()))
		}
	}
	vs = append(vs, total, float64(len(rep.Missed())))
	goals := 0
	for _, r := range rep.Results {
		vs = append(vs, r.P50, r.P99, r.Max, float64(r.Trials))
		for _, v := range r.Extra {
			vs = append(vs, v)
		}
		if r.Met != nil {
			goals++
		}
		if r.System != bench.SystemShardlease {
			continue
		}
		c := bench.Compare(rep.Results, r)
		for _, b := range []*bench.Result{c.Baseline, c.Tuned} {
			if b != nil {
				vs = append(vs, r.P50/b.P50, r.P99/b.P99, r.Max/b.Max, b.P50/r.P50, b.P99/r.P99, b.Max/r.Max)
			}
		}
	}
	return append(vs, float64(goals), float64(goals-len(rep.Missed())))
}

// SampleReport is a small synthetic run: an ownership comparison of all
// three systems, a shardlease row on another policy with its tuned
// baseline only, a missed goal and a row of neither.
func SampleReport() bench.Report {
	sl := bench.Measured("crash-failover", bench.SystemShardlease, "time until its shards have new handlers running", "s", []float64{2.202, 2.1, 2.3})
	sl.Policy = "shard.FastPolicy"
	sl = sl.WithGoal("p99 <= 3s", true).With("first_freed_s_p50", 1.364).With("first_freed_s_p99", 1.383).With("kv_visible_s_p50", 2.454).With("kv_visible_s_p99", 2.481)
	bl := bench.Measured("crash-failover", bench.SystemBaseline, sl.Metric, "s", []float64{44.97, 45.03, 45.1})
	bl.Policy = "api.Lock defaults"
	tu := bench.Measured("crash-failover", bench.SystemTuned, sl.Metric, "s", []float64{3.1, 3.3, 3.6})
	tu.Policy = "shard.FastPolicy"
	sd := bench.Measured("crash-failover", bench.SystemShardlease, sl.Metric, "s", []float64{11.2, 11.9, 12.4})
	sd.Policy = "shard.DefaultPolicy"
	td := bench.Measured("crash-failover", bench.SystemTuned, sl.Metric, "s", []float64{14.1, 14.5, 15.2})
	td.Policy = "shard.DefaultPolicy"
	mem := bench.Measured("commit-throughput", "memory", "fenced ÷ unfenced commits/s, one at a time", "ratio", []float64{0.6158, 0.638, 0.62}).WithGoal("p50 >= 0.9", false)
	ops := bench.Measured("lock-ops", "consul", "lock ops/s, 128 locks per /v1/txn", "ops/s", []float64{24382, 28188, 25000})
	return bench.Report{
		Machine: bench.Machine{Cores: 2, CPU: "AMD EPYC", MemoryBytes: 23 << 30, OS: "linux/amd64", Kernel: "6.18.44", GoVersion: "go1.26.8", ConsulVersion: "1.14.8", ConsulMode: "dev agent"},
		Trials:  3, Started: time.Date(2026, 12, 1, 17, 58, 33, 0, time.UTC), Commit: "25d6eec",
		Scenarios: []bench.ScenarioRun{{Name: "crash-failover", Seconds: 255.2}, {Name: "commit-throughput", Seconds: 61.7}, {Name: "lock-ops", Seconds: 18.3}},
		Results:   []bench.Result{bl, sl, tu, sd, td, mem, ops},
	}
}
