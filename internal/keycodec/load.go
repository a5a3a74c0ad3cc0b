package keycodec

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/shardlease/shardlease/shard"
)

// EncodeLoad is the value of a loads key: a JSON object of shard ID to
// load, as shard.Member.Load is written. A shard with an empty ID or a
// figure that is negative, NaN or infinite, or a value over
// shard.MaxLoadBytes, wraps shard.ErrInvalidArgument and names it; worker
// names whose loads they are.
func EncodeLoad(worker string, load map[shard.ID]float64) ([]byte, error) {
	for id, v := range load {
		if id == "" {
			return nil, fmt.Errorf("%w: loads of worker %q: a shard id is empty", shard.ErrInvalidArgument, worker)
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: loads of worker %q: shard %s has load %v, want a finite figure ≥ 0", shard.ErrInvalidArgument, worker, id, v)
		}
	}
	if load == nil {
		load = map[shard.ID]float64{}
	}
	b, err := json.Marshal(load)
	if err != nil {
		return nil, fmt.Errorf("%w: loads of worker %q: %v", shard.ErrInvalidArgument, worker, err)
	}
	if len(b) > shard.MaxLoadBytes {
		return nil, fmt.Errorf("%w: loads of worker %q: %d shards' figures take %d bytes of JSON, more than the %d a loads key may hold (Consul's 512 KiB value and transaction limits)",
			shard.ErrInvalidArgument, worker, len(load), len(b), shard.MaxLoadBytes)
	}
	return b, nil
}

// DecodeLoad reads a loads key's value, or says what is wrong with it.
func DecodeLoad(value []byte) (map[shard.ID]float64, error) {
	var load map[shard.ID]float64
	if err := json.Unmarshal(value, &load); err != nil {
		return nil, fmt.Errorf("malformed loads value (want a JSON object of shard id to load): %w", err)
	}
	return load, nil
}
