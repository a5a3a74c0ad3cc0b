package consul_test

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/coordtest"
)

// TestConformance runs the coordinator suite against a real Consul agent,
// in both liveness modes, each case on a fresh prefix.
func TestConformance(t *testing.T) {
	agent := consultest.StartDev(t)
	modes := []struct {
		liveness consul.Liveness
		timing   coordtest.Timing
	}{
		// The check's TTL can be short; invalidation follows within a sync.
		{consul.LivenessCheck, coordtest.Timing{TTL: 2 * time.Second, ExpiryWithin: 2 * time.Second, LockDelay: 2 * time.Second, Slack: 3 * time.Second}},
		// Consul's minimum session TTL is 10 s and it may take up to 2·TTL.
		{consul.LivenessTTL, coordtest.Timing{TTL: 10 * time.Second, ExpiryWithin: 10 * time.Second, LockDelay: 2 * time.Second, Slack: 3 * time.Second}},
	}
	for _, m := range modes {
		t.Run(string(m.liveness), func(t *testing.T) {
			t.Parallel()
			coordtest.Run(t,
				func(t *testing.T) shard.Coordinator {
					return newCoordinator(t, agent, func(c *consul.Config) { c.Liveness = m.liveness })
				},
				coordtest.WithDeleteShard(func(t *testing.T, c shard.Coordinator, id shard.ID) {
					if ok, err := c.(*consul.Coordinator).DeleteShard(t.Context(), id); err != nil || !ok {
						t.Fatalf("DeleteShard(%s) = %v, %v", id, ok, err)
					}
				}),
				coordtest.WithTiming(m.timing),
				coordtest.WithMaxTxnShards(consul.MaxTxnShards),
			)
		})
	}
}
