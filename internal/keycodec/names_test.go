package keycodec

import (
	"errors"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// TestNamingIndex: every ID Config.IDs writes is accepted at its index,
// and nothing else is, whatever the padding width.
func TestNamingIndex(t *testing.T) {
	for _, n := range []int{1, 10, 1000, 1001, 100_000} {
		c := shard.Config{Shards: n, Name: "s"}
		for i, id := range c.IDs() {
			if got, err := NamingOf(c).Index(id); err != nil || got != i {
				t.Fatalf("%d shards: Index(%q) = %d, %v; want %d", n, id, got, err, i)
			}
		}
	}
	c := shard.Config{Shards: 1000, Name: "s"}
	for _, id := range []shard.ID{"s-1", "s-0001", "s-1000", "s-+01", "s--01", "s-0x1", "t-001", "s001", "s-", "", "s-00a", "s/s-001"} {
		if i, err := NamingOf(c).Index(id); !errors.Is(err, shard.ErrUnknownShard) {
			t.Errorf("Index(%q) = %d, %v; want ErrUnknownShard", id, i, err)
		}
	}
}
