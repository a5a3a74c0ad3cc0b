package keycodec

import (
	"encoding/json"
	"fmt"

	"github.com/shardlease/shardlease/shard"
)

// standbyValue is a standby key's value: the shards as a set of c's
// indexes, those ready as another, and each shard's applied offset in the
// set's order. A worker with thousands of standbys (a join into a large
// fleet prepares one member's share at once) then writes a few bytes a
// shard, not its ID: 10,000 standbys with offsets of six digits take
// about 80 KB.
type standbyValue struct {
	Shards  string  `json:"shards"`
	Ready   string  `json:"ready,omitempty"`
	Applied []int64 `json:"applied"`
}

// EncodeStandby is the value of worker's standby key for fleet c. A shard
// outside c wraps shard.ErrUnknownShard; an applied offset below -1, or a
// value over shard.MaxLoadBytes (the bound of every report key), wraps
// shard.ErrInvalidArgument; each names the value.
func EncodeStandby(c shard.Config, worker string, states map[shard.ID]shard.StandbyState) ([]byte, error) {
	ids := make([]shard.ID, 0, len(states))
	var ready []shard.ID
	for id, s := range states {
		if s.Applied < -1 {
			return nil, fmt.Errorf("%w: standbys of worker %q: shard %s has applied offset %d, want -1 (nothing yet) or more", shard.ErrInvalidArgument, worker, id, s.Applied)
		}
		ids = append(ids, id)
		if s.Ready {
			ready = append(ready, id)
		}
	}
	set, err := EncodeSet(c, ids)
	if err != nil {
		return nil, fmt.Errorf("standbys of worker %q: %w", worker, err)
	}
	readySet, err := EncodeSet(c, ready)
	if err != nil {
		return nil, fmt.Errorf("standbys of worker %q: %w", worker, err)
	}
	sorted, err := DecodeSet(c, set) // the set's order, which Applied follows
	if err != nil {
		return nil, fmt.Errorf("standbys of worker %q: %w", worker, err)
	}
	v := standbyValue{Shards: set, Ready: readySet, Applied: make([]int64, len(sorted))}
	for k, id := range sorted {
		v.Applied[k] = states[id].Applied
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: standbys of worker %q: %v", shard.ErrInvalidArgument, worker, err)
	}
	if len(b) > shard.MaxLoadBytes {
		return nil, fmt.Errorf("%w: standbys of worker %q: %d shards' states take %d bytes, more than the %d a report key may hold",
			shard.ErrInvalidArgument, worker, len(states), len(b), shard.MaxLoadBytes)
	}
	return b, nil
}

// DecodeStandby reads a standby key's value for fleet c, or says what is
// wrong with it.
func DecodeStandby(c shard.Config, value []byte) (map[shard.ID]shard.StandbyState, error) {
	var v standbyValue
	if err := json.Unmarshal(value, &v); err != nil {
		return nil, fmt.Errorf("malformed standby value (want JSON {shards, ready, applied}): %w", err)
	}
	ids, err := DecodeSet(c, v.Shards)
	if err != nil {
		return nil, fmt.Errorf("standby value's shards: %w", err)
	}
	ready, err := DecodeSet(c, v.Ready)
	if err != nil {
		return nil, fmt.Errorf("standby value's ready shards: %w", err)
	}
	if len(v.Applied) != len(ids) {
		return nil, fmt.Errorf("standby value lists %d shards and %d applied offsets", len(ids), len(v.Applied))
	}
	out := make(map[shard.ID]shard.StandbyState, len(ids))
	for k, id := range ids {
		if v.Applied[k] < -1 {
			return nil, fmt.Errorf("standby value: shard %s has applied offset %d, below -1", id, v.Applied[k])
		}
		out[id] = shard.StandbyState{Applied: v.Applied[k]}
	}
	for _, id := range ready {
		s, ok := out[id]
		if !ok {
			return nil, fmt.Errorf("standby value: shard %s is ready but not among its shards", id)
		}
		s.Ready = true
		out[id] = s
	}
	return out, nil
}
