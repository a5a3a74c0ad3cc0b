package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"
)

// subcommands parse their own flags; `shardbench NAME …` runs one.
var subcommands = map[string]struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}{
	"consul-steady": {"Consul requests per worker per second in steady state at several shard counts, and each fleet's cold start", consulSteadyCmd},
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
	trials := fs.Int("trials", 5, "repetitions of each measurement; p50/p99 are taken over them")
	small := fs.Bool("small", false, "CI smoke sizes: a few workers and shards, short windows (its figures are not results)")
	fs.StringVar(&postgresDSN, "postgres", "", "PostgreSQL DSN for commit-throughput's postgres rows (default: start a throwaway cluster from the installed binaries)")
	asJSON := fs.Bool("json", false, "print one JSON document (every row, the machine, Go and Consul) instead of a table")
	markdown := fs.String("markdown", "", "also write the table as Markdown to `FILE` (for docs/benchmarks.md)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the scenarios (this process: workers, baseline, observers) to `FILE`, for go tool pprof")
	fs.Usage = func() { usage(fs) }
	if ok, code := parse(fs, args, stderr); !ok {
		return code
	}
	var problems []error
	if *spec == "" {
		problems = append(problems, errors.New("--scenario is required: all, or comma-separated names"))
	}
	selected, err := selectScenarios(*spec)
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

	agent, err := obtainConsul(ctx, *addr, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shardbench: %v\n", err)
		return exitFailed
	}
	defer agent.stop()
	env := &benchEnv{consul: agent.config, trials: *trials, small: *small, log: stderr}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "shardbench: --cpuprofile: %v\n", err)
			return exitBadInvoke
		}
		defer stopProfile()
	}
	rep := report{Machine: describeMachine(agent), Trials: *trials, Small: *small, Started: time.Now().UTC()}
	for _, s := range selected {
		env.logf("shardbench: %s: %s", s.name, s.summary)
		began := time.Now()
		rows, err := s.run(ctx, env)
		rep.Results = append(rep.Results, rows...)
		if err != nil {
			env.logf("shardbench: %s failed after %v: %v", s.name, time.Since(began).Round(time.Millisecond), err)
			rep.Errors = append(rep.Errors, scenarioError{Scenario: s.name, Error: err.Error()})
			if ctx.Err() != nil {
				break
			}
			continue
		}
		env.logf("shardbench: %s done in %v", s.name, time.Since(began).Round(time.Millisecond))
	}
	if *asJSON {
		rep.writeJSON(stdout)
	} else {
		rep.writeTable(stdout)
	}
	if *markdown != "" {
		var b strings.Builder
		rep.writeMarkdown(&b)
		if err := os.WriteFile(*markdown, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(stderr, "shardbench: --markdown: %v\n", err)
			return exitFailed
		}
	}
	if len(rep.Errors) > 0 {
		return exitFailed
	}
	return exitOK
}

func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, `usage: shardbench --scenario NAME[,NAME…]|all [--consul ADDR] [--trials N] [--small] [--json]
       shardbench SUBCOMMAND [flags]

Runs each scenario --trials times on one Consul agent, for shardlease and for
the api.Lock baseline, and prints p50/p99 over the trials side by side.

flags:
`)
	fs.PrintDefaults()
	fmt.Fprint(w, "\nscenarios:\n")
	for _, s := range scenarios {
		fmt.Fprintf(w, "  %-18s %s\n", s.name, s.summary)
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
