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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailed    = 1 // ran, and something failed (an invariant, a server)
	exitBadInvoke = 2 // bad command line
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

run 'shardd COMMAND -h' for a command's flags
`)
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
