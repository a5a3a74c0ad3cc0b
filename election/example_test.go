package election_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardlease/shardlease/election"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// One instance of a scheduler election on the embedded coordinator: it
// becomes leader, does its work with the term's token, and hands over when
// its context ends. Run more instances (on shard/consul, one per process)
// and exactly one of them leads at a time.
func ExampleElection_Run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := election.New(election.Config{
		ID:          "sched-1",
		Name:        "invoice-scheduler",
		Coordinator: memory.New(),
		Lead: func(ctx context.Context, l *election.Leadership) error {
			// Enqueue the jobs, each with l.Token or an idempotency key, and
			// record progress; l.Start holds what earlier leaders committed.
			if err := l.Commit(ctx, l.Start.Offset+10); err != nil {
				return err // a newer leader fenced the checkpoint
			}
			fmt.Println("lead: enqueued 10 jobs")
			cancel() // done for this example: leave the election
			<-ctx.Done()
			return nil // revoked (shutdown): return promptly; lost: return at once
		},
		OnChange: func(c election.Change) {
			fmt.Println("role:", c.Role)
			if c.Role == election.RoleSteppingDown {
				fmt.Println("  revoked, not lost:", errors.Is(c.Cause, worker.ErrRevoked))
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// role: candidate
	// role: leader
	// lead: enqueued 10 jobs
	// role: stepping_down
	//   revoked, not lost: true
	// role: stopped
}
