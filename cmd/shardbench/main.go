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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailed    = 1 // the scenario could not run (a server, a timeout)
	exitBadInvoke = 2 // bad command line
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

// parse parses flags, printing errors to stderr; ok is false on bad input.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (ok bool, code int) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, exitOK
		}
		return false, exitBadInvoke
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return false, exitBadInvoke
	}
	return true, exitOK
}

func printJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	fmt.Fprintln(w, string(b))
}
