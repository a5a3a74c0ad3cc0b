package fleetview

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// LoadOffsets reads every shard's checkpoint from the store, for
// Input.Offsets. It stops at the first error, which names the shard.
func LoadOffsets(ctx context.Context, st offsets.Store, ids []shard.ID) (map[shard.ID]offsets.Checkpoint, error) {
	out := make(map[shard.ID]offsets.Checkpoint, len(ids))
	for _, id := range ids {
		cp, err := st.Load(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("reading the offsets of %s: %w", id, err)
		}
		out[id] = cp
	}
	return out, nil
}
