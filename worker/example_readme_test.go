package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// The README's library snippet, run: its handler is written exactly as the
// README shows it (internal/harness/docscheck holds the two the same). It
// processes until its context ends and then commits once more: when the
// worker stops (a hand-off of every shard), that last commit goes through,
// so the next owner starts where this one stopped.
func ExampleHandlerFunc_readme() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := offmem.New()
	var mu sync.Mutex
	processed := map[shard.ID]int64{}
	three := make(chan struct{}, 2) // each shard past its third message
	process := func(ctx context.Context, id shard.ID, offset int64) int64 {
		select {
		case <-ctx.Done():
			return offset
		case <-time.After(time.Millisecond): // one message
		}
		mu.Lock()
		defer mu.Unlock()
		if processed[id] = offset + 1; offset+1 == 3 {
			three <- struct{}{}
		}
		return offset + 1
	}
	w, err := worker.New(worker.Config{
		ID:              "w1",
		Fleet:           shard.Config{Shards: 2},
		ColdStartGather: -1,           // one worker: place at once
		Coordinator:     memory.New(), // shard/consul for a fleet of processes
		Offsets:         store,        // offsets/postgres or offsets/consul for a fleet of processes
		Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			offset := c.Start.Offset // fenced with c.Token before this call
			for ctx.Err() == nil {
				offset = process(ctx, c.Shard, offset)
				if err := c.Commit(ctx, offset); errors.Is(err, offsets.ErrStaleToken) {
					return err // a newer owner fenced the shard
				}
			}
			// A hand-off (context.Cause(ctx) is worker.ErrRevoked): this last
			// commit still goes through while the claim drains. A loss
			// (worker.ErrLost): it is refused at once, without reaching the store.
			_ = c.Commit(ctx, offset)
			return nil
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-three
	<-three
	cancel() // stop: every shard is handed off, every handler drains
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	for _, id := range (shard.Config{Shards: 2}).IDs() {
		cp, _ := store.Load(context.Background(), id)
		mu.Lock()
		fmt.Printf("%s: committed up to the last message processed: %v\n", id, cp.Offset == processed[id])
		mu.Unlock()
	}
	// Output:
	// stream/shard-000: committed up to the last message processed: true
	// stream/shard-001: committed up to the last message processed: true
}
