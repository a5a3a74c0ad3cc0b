// Command shardbench measures shardlease on a real Consul against
// baselines measured in the same run: api.Lock from
// github.com/hashicorp/consul/api, as a Consul user writes it without this
// framework, with its defaults and tuned (internal/harness/apilock).
//
//	shardbench --scenario NAME[,NAME…]|all [--consul ADDR] [--trials N] [--small] [--json] [--check] [--docs FILE]
//	shardbench consul-steady [flags]
//	shardbench docs [--doc FILE]
//
// Without --consul it starts a dev agent of its own on free loopback ports
// (bin/consul under the module root, built with scripts/consul.sh when
// missing) and stops it at exit. It prints a table of p50/p99/max over the
// trials for every scenario, each shardlease row followed by its baselines
// with its ratios to them, or with --json one JSON document with every row
// and the machine, Go and Consul it ran on. --check exits 1 when a row
// misses its goal, naming it. --docs FILE writes the run's JSON and plot
// beside FILE and its generated section into FILE (docs/benchmarks.md;
// a run of some scenarios replaces only theirs, internal/bench/docsmerge.go);
// `shardbench docs` regenerates that section and plot from the JSON alone.
// Run `shardbench -h` for the scenarios.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/shardlease/shardlease/internal/cli"
)

// Exit codes.
const (
	exitOK        = cli.ExitOK
	exitFailed    = cli.ExitFailed    // a scenario could not run (a server, a timeout)
	exitBadInvoke = cli.ExitBadInvoke // bad command line
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// The command-line helpers every command shares.
var (
	parse     = cli.Parse
	printJSON = cli.PrintJSON
)
