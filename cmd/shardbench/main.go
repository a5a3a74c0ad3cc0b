// Command shardbench runs shardlease's benchmark scenarios and prints their
// figures (a table, or one JSON object per scenario with --json).
//
//	shardbench consul-steady [flags]   Consul requests per worker per second in
//	                                    steady state, and a fleet's cold start
//
// Run `shardbench SCENARIO -h` for a scenario's flags. Scenarios that need a
// server take its address (and the usual environment, e.g. CONSUL_HTTP_ADDR);
// they never start one themselves.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/shardlease/shardlease/internal/cli"
)

// Exit codes.
const (
	exitOK        = cli.ExitOK
	exitFailed    = cli.ExitFailed    // the scenario could not run (a server, a timeout)
	exitBadInvoke = cli.ExitBadInvoke // bad command line
)

// scenario is one benchmark: run parses its own flags.
type scenario struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// scenarios lists every benchmark by name.
var scenarios = map[string]scenario{
	"consul-steady": {"Consul requests per worker per second in steady state at several shard counts, and each fleet's cold start", consulSteadyCmd},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitBadInvoke
	}
	if s, ok := scenarios[args[0]]; ok {
		return s.run(ctx, args[1:], stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "shardbench: unknown scenario %q\n", args[0])
	usage(stderr)
	return exitBadInvoke
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: shardbench SCENARIO [flags]\n\nscenarios:\n")
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, scenarios[n].summary)
	}
	fmt.Fprint(w, "\nrun 'shardbench SCENARIO -h' for a scenario's flags\n")
}

// The command-line helpers every command shares.
var (
	parse     = cli.Parse
	printJSON = cli.PrintJSON
)
