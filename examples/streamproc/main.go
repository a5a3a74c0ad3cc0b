// Command streamproc runs a stream processor on shardlease: 12 workers
// share the 128 shards of a stream, each processing the shards it owns and
// committing offsets with the shard's fencing token. Once the fleet is
// balanced and the stream partly consumed, one worker dies. When its session
// expires, its shards (and only its shards) move to the other workers, each
// new owner resumes from the offset committed for the shard, and the stream
// is consumed to the end: nothing is lost, a few messages after the dead
// worker's last commits are processed twice (at-least-once), and no commit
// of a superseded owner is accepted.
//
//	go run ./examples/streamproc
//
// Everything runs in one process on the embedded coordinator with an
// in-memory offsets store; the death is simulated by cutting the worker off
// from both and freezing its handlers. Across machines, use shard/consul
// and a shared offsets store (PostgreSQL, Consul).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, defaultOptions(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "streamproc:", err)
		os.Exit(1)
	}
	if err := res.check(); err != nil {
		fmt.Fprintln(os.Stderr, "streamproc:", err)
		os.Exit(1)
	}
}
