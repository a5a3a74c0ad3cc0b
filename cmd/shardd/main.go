// Command shardd runs shardlease workers.
//
//	shardd demo [flags]     a whole fleet in one process, with injected faults
//	shardd worker [flags]   one worker process of a fleet on Consul
//	shardd run [flags] -- COMMAND [ARGS…]   COMMAND once per owned shard
//
// Run `shardd demo -h` for the flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/shardlease/shardlease/internal/cli"
)

// Exit codes.
const (
	exitOK        = cli.ExitOK
	exitFailed    = cli.ExitFailed    // ran, and something failed (an invariant, a server)
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitBadInvoke
	}
	switch args[0] {
	case "demo":
		return demoCmd(ctx, args[1:], stdout, stderr)
	case "worker":
		return workerCmd(ctx, args[1:], stdout, stderr)
	case "run":
		return runCmd(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		cli.PrintVersion(stdout, "shardd")
		return exitOK
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "shardd: unknown command %q\n", args[0])
		usage(stderr)
		return exitBadInvoke
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: shardd COMMAND [flags]

commands:
  demo    run a fleet of workers in one process on the embedded coordinator,
          inject faults (crash, pause past the TTL, join) and check that no
          stale commit is accepted and every shard ends up owned
          (--consul ADDR: the same on a real Consul)
  worker  run one worker process of a fleet on Consul (--prefix, --shards,
          --id); SIGTERM drains and releases its shards
  run     run a program once per owned shard (--shards, -- COMMAND ARGS…),
          with the shard and its fencing token in its environment; embedded
          by default, --consul ADDR to share the shards between machines
  version print the release, the commit and the protocol this build speaks

run 'shardd COMMAND -h' for a command's flags
`)
}

// The command-line helpers every command shares.
var (
	parse     = cli.Parse
	printJSON = cli.PrintJSON
)
