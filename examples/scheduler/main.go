// Command scheduler runs five instances of an invoice scheduler of which
// exactly one leads (package election) and enqueues the day's invoice jobs.
// Every job carries an idempotency key, invoice:<customer>:<date>, and the
// queue accepts each key once.
//
// The story: the first leader is killed mid-batch, after enqueueing more
// jobs than its last checkpoint records; a follower is elected with a higher
// token, resumes from the checkpoint, and the queue refuses the jobs it
// enqueues a second time. Then the second leader is cut off by a network
// partition: it steps down at its local deadline, a third instance takes
// over, and when the partition heals the old leader follows it. The queue
// ends with every invoice exactly once. Every role change is printed:
// candidate → leader → stepping_down → candidate or follower.
//
//	go run ./examples/scheduler
//
// Everything runs in one process on the embedded coordinator; with
// shard/consul as the coordinator the same code runs one instance per
// process. The lock chooses one scheduler; the idempotency keys make the
// retries after a crash harmless.
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
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
	if err := res.check(); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}
