package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// A worker on the embedded coordinator owns a four-shard fleet. Each
// handler starts from the shard's committed offset, commits with its
// claim's token, and returns when its context ends; the cause tells a
// hand-off (ErrRevoked) from a loss (ErrLost). Cancelling Run's context
// drains: every handler is revoked, every shard released.
func ExampleWorker_Run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var report []string
	w, err := worker.New(worker.Config{
		ID:          "w1",
		Fleet:       shard.Config{Shards: 4},
		Coordinator: memory.New(), // shard/consul for a fleet of processes
		Offsets:     offmem.New(), // offsets/bolt, offsets/consul, offsets/postgres
		Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			offset := c.Start.Offset + 10 // process ten messages from where the last owner stopped
			if err := c.Commit(ctx, offset); errors.Is(err, offsets.ErrStaleToken) {
				return err // a newer owner fenced the shard: stop acting for it
			}
			mu.Lock()
			report = append(report, fmt.Sprintf("%s: committed %d with token %d", c.Shard, offset, c.Token))
			if len(report) == 4 {
				cancel() // the example is done: shut the worker down
			}
			mu.Unlock()
			<-ctx.Done()
			if errors.Is(context.Cause(ctx), worker.ErrRevoked) {
				// Handed off: commit what was processed (the claim drains,
				// so the commit goes through), then return.
				_ = c.Commit(ctx, offset)
			}
			return nil // lost: return at once, commits would be refused
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Run(ctx); err != nil {
		fmt.Println(err)
	}
	slices.Sort(report)
	for _, line := range report {
		fmt.Println(line)
	}
	fmt.Println("after Run:", w.Status().State)
	// Output:
	// stream/shard-000: committed 10 with token 6
	// stream/shard-001: committed 10 with token 6
	// stream/shard-002: committed 10 with token 6
	// stream/shard-003: committed 10 with token 6
	// after Run: stopped
}

// New checks the whole Config before anything runs, and names every
// problem at once.
func ExampleNew() {
	_, err := worker.New(worker.Config{
		ID:     "w 1",
		Fleet:  shard.Config{Shards: 0},
		Policy: shard.LeasePolicy{TTL: time.Second, RenewEvery: time.Second},
	})
	fmt.Println(errors.Is(err, worker.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// worker: invalid config: worker id "w 1" must not contain '/' or spaces; shard: invalid fleet config: shard count 0 is out of range: want 1..131072; shard: invalid lease policy: 2 × renew 1s + pause 0s = 2s exceeds ttl 1s by 1s; coordinator is nil; offset store is nil; handler is nil
}
