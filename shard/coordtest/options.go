package coordtest

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Option configures Run.
type Option func(*options)

// Timing is the real time the suite may spend on the coordinator's timers.
type Timing struct {
	// TTL of the sessions that are left to expire. Default 1 s.
	TTL time.Duration
	// ExpiryWithin: how long after TTL an un-renewed session may take to be
	// invalidated (Consul TTL mode: TTL more, as it may take 2·TTL; check
	// mode: the agent's sync, well under a second). Default 2 s.
	ExpiryWithin time.Duration
	// LockDelay of the expiring session. Default 2 s. It must be long
	// enough for the suite to try an acquisition between the invalidation
	// being seen and the delay ending: a second or more.
	LockDelay time.Duration
	// Slack is added to every bound on how long something may take (a
	// watch to see a write, a retry after lock-delay). Default 2 s.
	Slack time.Duration
}

type options struct {
	operator          Operator
	timing            Timing
	maxTxnShards      int
	maxTxnAssignments int
}

// Operator changes a fleet's keys from under the coordinator, as a person
// with the lock service's own tools would (memory: its DeleteShard,
// DeleteMember, PutMember, DeleteAssignor and PutAssignmentValue; Consul:
// KV calls). Cases need it to check that tokens, epochs and watches
// survive such edits, and that unreadable values are reported. Each method
// must fail the test itself if it cannot do what it is asked.
type Operator interface {
	// DeleteShard deletes a shard's lock key, held or not.
	DeleteShard(t *testing.T, c shard.Coordinator, id shard.ID)
	// DeleteMember deletes a member key, held or not.
	DeleteMember(t *testing.T, c shard.Coordinator, id string)
	// PutMember overwrites the member key of m.ID with m, leaving its lock
	// alone (Consul: a plain KV put, which keeps the key's session).
	PutMember(t *testing.T, c shard.Coordinator, m shard.Member)
	// DeleteAssignor deletes P/assignor, held or not.
	DeleteAssignor(t *testing.T, c shard.Coordinator)
	// PutAssignment writes value, as is, to worker's assignment key
	// P/assign/<worker>/shards (Consul: a plain KV put), leaving the
	// assignor's memory beside it alone.
	PutAssignment(t *testing.T, c shard.Coordinator, worker string, value []byte)
	// PutAssignmentMemory writes value, as is, to the assignor's memory
	// beside worker's key, P/assign/<worker>/memory, leaving the key alone.
	PutAssignmentMemory(t *testing.T, c shard.Coordinator, worker string, value []byte)
}

// WithOperator is required: the coordinator's Operator.
func WithOperator(op Operator) Option {
	return func(o *options) { o.operator = op }
}

// WithTiming sets the suite's time bounds; zero fields keep their default.
func WithTiming(tm Timing) Option {
	return func(o *options) {
		if tm.TTL > 0 {
			o.timing.TTL = tm.TTL
		}
		if tm.ExpiryWithin > 0 {
			o.timing.ExpiryWithin = tm.ExpiryWithin
		}
		if tm.LockDelay > 0 {
			o.timing.LockDelay = tm.LockDelay
		}
		if tm.Slack > 0 {
			o.timing.Slack = tm.Slack
		}
	}
}

// WithMaxTxnShards states how many shards the coordinator locks per
// transaction (default 64, as shard/memory and shard/consul): the batch
// case expects that many shards per distinct token.
func WithMaxTxnShards(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxTxnShards = n
		}
	}
}

// WithMaxTxnAssignments states how many workers' assignments the
// coordinator writes per Assign transaction (default 64, as shard/memory;
// shard/consul writes 63): the batch case expects that many per distinct
// index.
func WithMaxTxnAssignments(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxTxnAssignments = n
		}
	}
}

func newOptions(opts []Option) options {
	o := options{
		timing:            Timing{TTL: time.Second, ExpiryWithin: 2 * time.Second, LockDelay: 2 * time.Second, Slack: 2 * time.Second},
		maxTxnShards:      64,
		maxTxnAssignments: 64,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
