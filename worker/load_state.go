package worker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// loadState is the worker's part in load balancing: the meters of the
// shards it runs and what it last wrote to its loads key.
type loadState struct {
	meters meters
	// asked is whether this worker's assignment key, as last read, asks
	// for its loads (shard.Assignment.Loads).
	asked atomic.Bool

	mu sync.Mutex
	// written is the loads this worker last wrote to its loads key, and
	// the session it wrote them with (another session's key is not shown
	// as this worker's Load, so it counts as nothing written).
	written        map[shard.ID]float64
	writtenSession shard.SessionID
	writtenAt      time.Time
}
