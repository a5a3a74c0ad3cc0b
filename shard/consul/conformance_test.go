package consul_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
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
				coordtest.WithOperator(kvOperator{}),
				coordtest.WithTiming(m.timing),
				coordtest.WithMaxTxnShards(consul.MaxTxnShards),
				coordtest.WithMaxTxnAssignments(consul.MaxTxnAssignments),
			)
		})
	}
}

// kvOperator edits a fleet's keys as an operator would with the KV API.
type kvOperator struct{}

func (kvOperator) DeleteShard(t *testing.T, c shard.Coordinator, id shard.ID) {
	if ok, err := c.(*consul.Coordinator).DeleteShard(t.Context(), id); err != nil || !ok {
		t.Fatalf("DeleteShard(%s) = %v, %v", id, ok, err)
	}
}

func (kvOperator) DeleteMember(t *testing.T, c shard.Coordinator, id string) {
	cc := c.(*consul.Coordinator)
	if _, err := consul.APIClient(cc).KV().Delete(cc.Prefix()+"/members/"+id, nil); err != nil {
		t.Fatalf("deleting member key %s: %v", id, err)
	}
}

// PutMember is a plain PUT (no acquire): Consul keeps the key's session.
func (kvOperator) PutMember(t *testing.T, c shard.Coordinator, m shard.Member) {
	cc := c.(*consul.Coordinator)
	value, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consul.APIClient(cc).KV().Put(&api.KVPair{Key: cc.Prefix() + "/members/" + m.ID, Value: value}, nil); err != nil {
		t.Fatalf("putting member key %s: %v", m.ID, err)
	}
}

func (kvOperator) DeleteAssignor(t *testing.T, c shard.Coordinator) {
	cc := c.(*consul.Coordinator)
	if _, err := consul.APIClient(cc).KV().Delete(cc.Prefix()+"/assignor", nil); err != nil {
		t.Fatalf("deleting the assignor key: %v", err)
	}
}

// PutAssignment is a plain PUT of the value as given.
func (kvOperator) PutAssignment(t *testing.T, c shard.Coordinator, worker string, value []byte) {
	cc := c.(*consul.Coordinator)
	if _, err := consul.APIClient(cc).KV().Put(&api.KVPair{Key: cc.Prefix() + "/assign/" + worker + "/shards", Value: value}, nil); err != nil {
		t.Fatalf("putting assignment key %s: %v", worker, err)
	}
}

// PutAssignmentMemory is a plain PUT of the memory as given.
func (kvOperator) PutAssignmentMemory(t *testing.T, c shard.Coordinator, worker string, value []byte) {
	cc := c.(*consul.Coordinator)
	if _, err := consul.APIClient(cc).KV().Put(&api.KVPair{Key: cc.Prefix() + "/assign/" + worker + "/memory", Value: value}, nil); err != nil {
		t.Fatalf("putting assignment memory %s: %v", worker, err)
	}
}
