package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
)

// subcommands parse their own flags; `shardbench NAME …` runs one.
var subcommands = map[string]struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}{
	"consul-steady": {"Consul requests per worker per second in steady state at several shard counts, and each fleet's cold start", consulSteadyCmd},
	"docs":          {"regenerate a document's run section and plot from the run's JSON beside it, running nothing", docsCmd},
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if s, ok := subcommands[args[0]]; ok {
			return s.run(ctx, args[1:], stdout, stderr)
		}
		fmt.Fprintf(stderr, "shardbench: unknown subcommand %q; did you mean --scenario %s?\n", args[0], args[0])
		return exitBadInvoke
	}
	fs := flag.NewFlagSet("shardbench", flag.ContinueOnError)
	spec := fs.String("scenario", "", "scenarios to run: all, or comma-separated names (see below)")
	addr := fs.String("consul", "", "HTTP address of a Consul agent to use (default: start a dev agent from bin/consul)")
	etcdEndpoints := fs.String("etcd", "", "comma-separated endpoints of an etcd to use for the scenarios that run on etcd (default: start one member from bin/etcd when one needs it)")
	trials := fs.Int("trials", 5, "repetitions of each measurement; p50/p99/max are taken over them (the crash and stop rows run at least 20 unless --small)")
	small := fs.Bool("small", false, "CI smoke sizes: a few workers and shards, short windows (its figures are not results)")
	postgres := fs.String("postgres", "", "PostgreSQL DSN for commit-throughput's postgres rows and stream-e2e (default: start a throwaway cluster from the installed binaries)")
	asJSON := fs.Bool("json", false, "print one JSON document (every row, the machine, Go and Consul) instead of a table")
	markdown := fs.String("markdown", "", "also write the table as Markdown to `FILE` (for docs/benchmarks.md)")
	docs := fs.String("docs", "", "write the run's JSON to bench/run.json and its plots to img/ownership.svg (and img/load.svg with skewed-load) beside `FILE`, and its table and figures between FILE's shardbench markers (make shardbench: docs/benchmarks.md); a run of some scenarios replaces only theirs, naming its commit")
	check := fs.Bool("check", false, "exit 1 when any row misses its goal or any scenario fails, naming them")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the scenarios (this process: workers, baseline, observers) to `FILE`, for go tool pprof")
	fs.Usage = func() { usage(fs) }
	if ok, code := parse(fs, args, stderr); !ok {
		return code
	}
	var problems []error
	if *spec == "" {
		problems = append(problems, errors.New("--scenario is required: all, or comma-separated names"))
	}
	selected, err := scenarios.Select(*spec)
	if *spec != "" && err != nil {
		problems = append(problems, err)
	}
	if *trials < 1 {
		problems = append(problems, fmt.Errorf("--trials %d: want at least 1", *trials))
	}
	if err := errors.Join(problems...); err != nil {
		fmt.Fprintf(stderr, "shardbench: %v\n", err)
		return exitBadInvoke
	}

	agent, err := bench.ObtainConsul(ctx, *addr, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shardbench: %v\n", err)
		return exitFailed
	}
	defer agent.Stop()
	etcd := bench.NewEtcdSource(splitList(*etcdEndpoints), stderr)
	defer etcd.Stop()
	env := &bench.Env{Consul: agent.Config, Trials: *trials, Small: *small, Log: stderr, PostgresDSN: *postgres, Etcd: etcd}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "shardbench: --cpuprofile: %v\n", err)
			return exitBadInvoke
		}
		defer stopProfile()
	}
	rep := bench.Report{Machine: bench.DescribeMachine(agent), Trials: *trials, Small: *small, Started: time.Now().UTC(), Commit: sourceCommit()}
	selected.Run(ctx, env, &rep)
	return finish(rep, outputs{json: *asJSON, markdown: *markdown, docs: *docs, check: *check}, stdout, stderr)
}

// splitList is a comma-separated flag's values, blanks dropped.
func splitList(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// outputs are where a run's report goes and whether its goals decide the
// exit code.
type outputs struct {
	json     bool   // one JSON document on stdout instead of the table
	markdown string // also the Markdown table to this file
	docs     string // also the run's documents, beside and into this file
	check    bool   // a missed goal fails the run
}

// finish writes rep where o says and returns the run's exit code: failed
// when a scenario failed, or with o.check when a row missed its goal.
func finish(rep bench.Report, o outputs, stdout, stderr io.Writer) int {
	if o.json {
		rep.WriteJSON(stdout)
	} else {
		rep.WriteTable(stdout)
	}
	code := exitOK
	if o.markdown != "" {
		var b strings.Builder
		rep.WriteMarkdown(&b)
		if err := os.WriteFile(o.markdown, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(stderr, "shardbench: --markdown: %v\n", err)
			code = exitFailed
		}
	}
	if o.docs != "" {
		if err := bench.WriteDocs(rep, bench.DocsFor(o.docs), scenarios); err != nil {
			fmt.Fprintf(stderr, "shardbench: --docs: %v\n", err)
			code = exitFailed
		}
	}
	if o.check {
		if !rep.Check(stderr) {
			code = exitFailed
		}
	} else if len(rep.Errors) > 0 {
		code = exitFailed
	}
	return code
}

// docsCmd is `shardbench docs`: the run section of a document and its plot
// regenerated from the JSON a run wrote beside it.
func docsCmd(_ context.Context, args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardbench docs", flag.ContinueOnError)
	doc := fs.String("doc", "docs/benchmarks.md", "the document whose shardbench section to regenerate from bench/run.json beside it")
	if ok, code := parse(fs, args, stderr); !ok {
		return code
	}
	if err := bench.RenderDocs(bench.DocsFor(*doc)); err != nil {
		fmt.Fprintf(stderr, "shardbench docs: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// sourceCommit is the revision the binary was built from: the build's VCS
// stamp, else git's HEAD in the working directory, else "".
func sourceCommit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 7 {
				return s.Value[:7]
			}
		}
	}
	out, err := exec.Command("git", "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, `usage: shardbench --scenario NAME[,NAME…]|all [--consul ADDR] [--trials N] [--small] [--json] [--check] [--docs FILE]
       shardbench SUBCOMMAND [flags]

Runs each scenario --trials times on one Consul agent, for shardlease and for
the api.Lock baselines, and prints p50/p99/max over the trials with
shardlease's ratios to each baseline.

flags:
`)
	fs.PrintDefaults()
	fmt.Fprint(w, "\nscenarios:\n")
	for _, s := range scenarios {
		fmt.Fprintf(w, "  %-18s %s\n", s.Name, s.Summary)
	}
	fmt.Fprint(w, "\nsubcommands (run 'shardbench SUBCOMMAND -h' for their flags):\n")
	for name, s := range subcommands {
		fmt.Fprintf(w, "  %-18s %s\n", name, s.summary)
	}
}

// startCPUProfile profiles this process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
