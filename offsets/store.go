package offsets

import (
	"context"
	"errors"

	"github.com/shardlease/shardlease/shard"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrStaleToken: the token offered is below the shard's floor (the
	// highest token fenced or committed for it). The writer is a stale
	// owner; it must stop acting for the shard.
	ErrStaleToken = errors.New("offsets: stale fencing token")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("offsets: store closed")
	// ErrInvalidOffset: a negative offset was offered.
	ErrInvalidOffset = errors.New("offsets: invalid offset")
	// ErrUnavailable: the backend could not be reached, had no leader, or
	// failed the call for a passing reason, and nothing was written. The
	// call may be retried as it is.
	ErrUnavailable = errors.New("offsets: store unavailable")
	// ErrOutcomeUnknown: a write was sent and its answer never came back
	// (the connection broke, the context ended, the server failed while
	// applying it). It may or may not have been applied; it is never
	// reported as success or as stale. Retrying a Commit or Fence with the
	// same token is safe, because an equal token may overwrite.
	ErrOutcomeUnknown = errors.New("offsets: outcome unknown")
	// ErrCorrupt: the stored checkpoint of a shard is not a record the
	// store wrote, or breaks the rule (negative offset, token above floor,
	// floor 0). Reads and writes of that shard fail, naming it, until an
	// operator repairs it; the store never overwrites or obeys it.
	ErrCorrupt = errors.New("offsets: corrupt checkpoint")
)

// Checkpoint is what a store holds for one shard.
type Checkpoint struct {
	// Offset is the last committed offset (0 when none was committed).
	Offset int64 `json:"offset"`
	// Token is the token of the commit that wrote Offset (0 when none).
	Token shard.Token `json:"token"`
	// Floor is the highest token fenced or committed for the shard. Writes
	// with a lower token are rejected.
	Floor shard.Token `json:"floor"`
}

// Store keeps fenced offsets. In every implementation the token check and the
// write are one atomic step. All methods are safe for concurrent use.
type Store interface {
	// Fence raises the shard's floor to token without changing its offset.
	// ErrStaleToken when token is below the floor; an equal token is a no-op.
	Fence(ctx context.Context, s shard.ID, token shard.Token) error
	// Commit stores offset for the shard if token is not below the floor,
	// and raises the floor to token. An equal token may overwrite. Errors
	// wrapping ErrStaleToken name the shard, the token and the floor.
	Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error
	// Load returns the shard's checkpoint; the zero Checkpoint for a shard
	// never fenced or committed.
	Load(ctx context.Context, s shard.ID) (Checkpoint, error)
	// Close releases the store's resources.
	Close() error
}

// Local is implemented by a Store whose checkpoints only the process that
// opened it sees (offsets/memory, offsets/bolt: a map, a file one process
// opens). Such a store fences owners inside that process only: an owner in
// another process neither sees its commits (it starts from offset 0) nor
// is refused by its floor. worker.New refuses one beside a coordinator
// shared between processes unless told the whole fleet runs in one
// process (worker.Config.LocalOffsets).
type Local interface {
	ProcessLocal() bool
}
