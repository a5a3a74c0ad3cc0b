package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

// The embedded coordinator used directly, as a worker uses it: a session
// per worker, locks taken in one transaction, and a fencing token that is
// higher for every new owner of a shard. (Most programs use it only as
// worker.Config.Coordinator.)
func ExampleNew() {
	ctx := context.Background()
	c := memory.New()
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 2}); err != nil {
		fmt.Println(err)
		return
	}
	a, _ := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "a", TTL: 10 * time.Second})
	b, _ := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "b", TTL: 10 * time.Second})
	_ = c.Members().Join(ctx, a, shard.Member{ID: "a", Weight: 1})
	_ = c.Members().Join(ctx, b, shard.Member{ID: "b", Weight: 1})

	want := []shard.Acquisition{shard.AcquireShard("stream/shard-000", "example"), shard.AcquireShard("stream/shard-001", "example")}
	got, _ := c.Locks().Acquire(ctx, a, want)
	fmt.Println("a holds", got) // both in one transaction: one token
	got, _ = c.Locks().Acquire(ctx, b, want)
	fmt.Println("b holds", got) // held by a: left out, not an error

	_ = c.Locks().Release(ctx, a, shard.ShardLocks([]shard.ID{"stream/shard-001"}), "handed off")
	got, _ = c.Locks().Acquire(ctx, b, want[1:])
	fmt.Println("b holds", got) // a later write: a higher token

	s, _ := c.Fleet().Watch(ctx, 0)
	fmt.Println(s.Owners())
	// Output:
	// a holds [stream/shard-000@5 stream/shard-001@5]
	// b holds []
	// b holds [stream/shard-001@7]
	// map[stream/shard-000:a stream/shard-001:b]
}
