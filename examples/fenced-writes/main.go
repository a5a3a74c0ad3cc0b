// Command fenced-writes tells the paused-leader story with shardlease's
// public API, and shows why a lock alone is not enough.
//
// Worker A holds the lock on one shard and writes to a shared store with the
// lock's fencing token. Then A's process stops dead (a long garbage
// collection, a frozen VM) with one more write already prepared. Its session
// expires; worker B acquires the lock with a higher token and writes. When A
// wakes up it sends the write it had prepared. The store remembers the
// highest token it has accepted and rejects A's write, so the final value is
// B's.
//
//	go run ./examples/fenced-writes                     # embedded coordinator
//	go run ./examples/fenced-writes --consul 127.0.0.1:8500
//	go run ./examples/fenced-writes --etcd 127.0.0.1:2379
//
// With --consul or --etcd, A and B each get their own coordinator, as two
// processes would; the pause is simulated in-process by holding A's calls to
// the coordinator and its prepared write. The other -consul-* flags (token,
// TLS) and the CONSUL_HTTP_* environment variables work as for the consul
// CLI; the -etcd-* flags and ETCDCTL_* variables as for etcdctl.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/shardlease/shardlease/examples/internal/engine"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fenced-writes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var choice engine.Choice
	choice.Register(fs, "shardlease-examples/fenced-writes")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if err := choice.Parsed(fs); err != nil {
		fmt.Fprintln(stderr, "fenced-writes:", err)
		return 2
	}
	o := embeddedOptions()
	if choice.Shared() {
		o = sharedOptions(&choice)
	}
	res, err := run(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "fenced-writes:", err)
		return 1
	}
	if !res.ok() {
		fmt.Fprintln(stderr, "fenced-writes: the story did not end as it must: the final value is not B's")
		return 1
	}
	return 0
}
