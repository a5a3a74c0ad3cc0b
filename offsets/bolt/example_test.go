package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shardlease/shardlease/offsets/bolt"
)

// Offsets and their fencing floors on local disk survive a restart: a
// reopened store still refuses the superseded owner.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "offsets-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "offsets.db")
	ctx := context.Background()

	st, err := bolt.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = st.Fence(ctx, "stream/shard-000", 8)
	fmt.Println(st.Commit(ctx, "stream/shard-000", 8, 250)) // fsync'd when it returns nil
	_ = st.Close()

	st, err = bolt.Open(path) // after a restart
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	cp, _ := st.Load(ctx, "stream/shard-000")
	fmt.Printf("offset %d, token %d, floor %d\n", cp.Offset, cp.Token, cp.Floor)
	fmt.Println(st.Commit(ctx, "stream/shard-000", 7, 300))
	// Output:
	// <nil>
	// offset 250, token 8, floor 8
	// offsets: stale fencing token: shard stream/shard-000: token 7 is below floor 8
}
