package etcd_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/coordtest"
	"github.com/shardlease/shardlease/shard/etcd"
)

// TestConformance runs the coordinator suite against a real etcd member,
// each case on a fresh prefix; TestConformanceOnThreeMembers against a
// three-member cluster, each coordinator's client on every member (reads,
// watches and progress notices served by followers too).
func TestConformance(t *testing.T) { conformance(t, etcdtest.Start(t)) }

func TestConformanceOnThreeMembers(t *testing.T) { conformance(t, etcdtest.StartCluster(t, 3)) }

func conformance(t *testing.T, cluster *etcdtest.Cluster) {
	coordtest.Run(t,
		func(t *testing.T) shard.Coordinator { return newCoordinator(t, cluster) },
		coordtest.WithOperator(kvOperator{}),
		// A lease is whole seconds, at least 2 s on a default etcd; its
		// expiry is checked every 500 ms.
		coordtest.WithTiming(coordtest.Timing{TTL: 2 * time.Second, ExpiryWithin: 2 * time.Second, LockDelay: 2 * time.Second, Slack: 3 * time.Second}),
		coordtest.WithMaxTxnShards(etcd.MaxTxnShards),
		coordtest.WithMaxTxnAssignments(etcd.MaxTxnAssignments),
	)
}

// kvOperator edits a fleet's keys as an operator would with etcdctl.
type kvOperator struct{}

func (kvOperator) key(c shard.Coordinator, rel string) string {
	return c.(*etcd.Coordinator).Prefix() + "/" + rel
}

func (o kvOperator) del(t *testing.T, c shard.Coordinator, rel string) {
	t.Helper()
	if _, err := c.(*etcd.Coordinator).Client().Delete(t.Context(), o.key(c, rel)); err != nil {
		t.Fatalf("deleting %s: %v", rel, err)
	}
}

func (o kvOperator) put(t *testing.T, c shard.Coordinator, rel string, value []byte) {
	t.Helper()
	if _, err := c.(*etcd.Coordinator).Client().Put(t.Context(), o.key(c, rel), string(value)); err != nil {
		t.Fatalf("putting %s: %v", rel, err)
	}
}

func (o kvOperator) DeleteShard(t *testing.T, c shard.Coordinator, id shard.ID) {
	o.del(t, c, "shards/"+string(id))
}

func (o kvOperator) DeleteMember(t *testing.T, c shard.Coordinator, id string) {
	o.del(t, c, "members/"+id)
}

// PutMember rewrites the value inside the key's envelope, keeping its
// holder, as `etcdctl put` of an edited copy would.
func (o kvOperator) PutMember(t *testing.T, c shard.Coordinator, m shard.Member) {
	resp, err := c.(*etcd.Coordinator).Client().Get(t.Context(), o.key(c, "members/"+m.ID))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading member key %s: %v (%d keys)", m.ID, err, len(resp.Kvs))
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(resp.Kvs[0].Value, &env); err != nil {
		t.Fatalf("member key %s: %v", m.ID, err)
	}
	if env["value"], err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	value, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	o.put(t, c, "members/"+m.ID, value)
}

func (o kvOperator) DeleteAssignor(t *testing.T, c shard.Coordinator) { o.del(t, c, "assignor") }

func (o kvOperator) PutAssignment(t *testing.T, c shard.Coordinator, worker string, value []byte) {
	o.put(t, c, "assign/"+worker+"/shards", value)
}

func (o kvOperator) PutAssignmentMemory(t *testing.T, c shard.Coordinator, worker string, value []byte) {
	o.put(t, c, "assign/"+worker+"/memory", value)
}
