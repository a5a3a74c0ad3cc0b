package memory_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/memory"
)

// The fencing rule: a new owner fences the shard with its higher token
// before it starts, and from then on the old owner's late commit is
// refused; the new owner resumes from what the old one committed.
func ExampleStore() {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()

	_ = st.Fence(ctx, "stream/shard-007", 41) // owner A acquires with token 41
	fmt.Println(st.Commit(ctx, "stream/shard-007", 41, 100))

	_ = st.Fence(ctx, "stream/shard-007", 42) // owner B acquires with token 42
	cp, _ := st.Load(ctx, "stream/shard-007")
	fmt.Printf("B resumes at %d (written by token %d, floor %d)\n", cp.Offset, cp.Token, cp.Floor)

	err := st.Commit(ctx, "stream/shard-007", 41, 130) // A wakes up from a pause
	fmt.Println(errors.Is(err, offsets.ErrStaleToken), err)
	fmt.Println(st.Commit(ctx, "stream/shard-007", 42, 120))
	// Output:
	// <nil>
	// B resumes at 100 (written by token 41, floor 42)
	// true offsets: stale fencing token: shard stream/shard-007: token 41 is below floor 42
	// <nil>
}
