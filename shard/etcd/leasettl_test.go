package etcd_test

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard/etcd"
)

// TestLeaseTTL: etcd counts whole seconds, so a session's TTL is rounded
// up, never down (a lease shorter than the worker's own deadline would
// free its shards while it still acts as their owner).
func TestLeaseTTL(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		time.Second: time.Second, 1500 * time.Millisecond: 2 * time.Second, 2001 * time.Millisecond: 3 * time.Second, time.Millisecond: time.Second,
	} {
		if got := etcd.LeaseTTL(ttl); got != want {
			t.Errorf("LeaseTTL(%v) = %v, want %v", ttl, got, want)
		}
	}
}
