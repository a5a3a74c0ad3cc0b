package shard

import (
	"context"
	"fmt"
)

// MaxHistoryBytes bounds the value of P/history (History.Record), for the
// reasons MaxLoadBytes gives: Consul stores at most 512 KiB in a key and
// takes at most 512 KiB of /v1/txn body, where a value travels
// base64-encoded.
const MaxHistoryBytes = MaxLoadBytes

// History is the fleet's ownership history, P/history: one value, in the
// assignor's own format (package internal/history), recording the last
// changes of owner the assignors saw, so that an operator can tell after
// the fact which worker held a shard with a given token (shardctl history,
// shardctl explain). It is a record, never authority: ownership is the
// shard's lock and nothing else.
type History interface {
	// Record writes value as P/history, a plain key held by no session,
	// in one transaction that first checks that the session holds
	// AssignorLock at exactly epoch: a deposed assignor's record is
	// refused (ErrNotAssignor) and nothing is written. A value over
	// MaxHistoryBytes wraps ErrInvalidArgument, before anything is
	// written.
	Record(ctx context.Context, id SessionID, epoch Token, value []byte) error
	// Read returns P/history's value and the key's modify index: nil and
	// 0 when the key is missing.
	Read(ctx context.Context) ([]byte, uint64, error)
}

// CheckHistorySize is History.Record's check of a value's size, the
// same for every coordinator: one over MaxHistoryBytes wraps
// ErrInvalidArgument.
func CheckHistorySize(value []byte) error {
	if len(value) > MaxHistoryBytes {
		return fmt.Errorf("%w: record history: %d bytes, over the %d a key holds (keep fewer changes)",
			ErrInvalidArgument, len(value), MaxHistoryBytes)
	}
	return nil
}
