package fleet

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/internal/harness/procfleet"
)

// AssignorOf returns the worker whose session holds P/assignor in f, read
// from that one key (a listing of the prefix would read every shard): ""
// for a fleet without an assignor (the baselines), or while the lock is
// free unless must.
func AssignorOf(ctx context.Context, f Fleet, must bool) (string, error) {
	if a, ok := f.(interface {
		Assignor(ctx context.Context, must bool) (string, error)
	}); ok {
		return a.Assignor(ctx, must)
	}
	return noAssignor(f, must)
}

// noAssignor is the answer of a fleet without an assignor.
func noAssignor(f Fleet, must bool) (string, error) {
	if must {
		return "", fmt.Errorf("%s: %w (it has no assignor)", f.System(), procfleet.ErrNoAssignor)
	}
	return "", nil
}
