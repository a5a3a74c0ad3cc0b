package coordtest_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/coordtest"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMemory runs the conformance suite against the embedded coordinator,
// in real time: it invalidates at exactly TTL, so short timings suffice.
// The margins are still wide enough for a loaded CI machine: a scheduling
// stall between seeing an invalidation and the next acquire must not
// outlast the lock-delay, or the "refused inside lock-delay" check fails
// for the wrong reason.
func TestMemory(t *testing.T) {
	coordtest.Run(t,
		func(t *testing.T) shard.Coordinator { return memory.New() },
		coordtest.WithOperator(memoryOperator{}),
		coordtest.WithTiming(coordtest.Timing{
			TTL:          500 * time.Millisecond,
			ExpiryWithin: 500 * time.Millisecond,
			LockDelay:    2 * time.Second,
			Slack:        time.Second,
		}),
		coordtest.WithMaxTxnShards(memory.MaxTxnShards),
		coordtest.WithMaxTxnAssignments(memory.MaxTxnAssignments),
	)
}

// memoryOperator edits keys with the embedded coordinator's test hooks.
type memoryOperator struct{}

func (memoryOperator) DeleteShard(t *testing.T, c shard.Coordinator, id shard.ID) {
	if !c.(*memory.Coordinator).DeleteShard(id) {
		t.Fatalf("DeleteShard(%s): no such key", id)
	}
}

func (memoryOperator) DeleteMember(t *testing.T, c shard.Coordinator, id string) {
	if !c.(*memory.Coordinator).DeleteMember(id) {
		t.Fatalf("DeleteMember(%s): no such key", id)
	}
}

func (memoryOperator) PutMember(t *testing.T, c shard.Coordinator, m shard.Member) {
	c.(*memory.Coordinator).PutMember(m)
}

func (memoryOperator) DeleteAssignor(t *testing.T, c shard.Coordinator) {
	if !c.(*memory.Coordinator).DeleteAssignor() {
		t.Fatal("DeleteAssignor: no such key")
	}
}

func (memoryOperator) PutAssignment(t *testing.T, c shard.Coordinator, worker string, value []byte) {
	c.(*memory.Coordinator).PutAssignmentValue(worker, value)
}

func (memoryOperator) PutAssignmentMemory(t *testing.T, c shard.Coordinator, worker string, value []byte) {
	c.(*memory.Coordinator).PutAssignmentMemory(worker, value)
}
