package shard

import (
	"encoding/json"
	"fmt"
	"math"
)

// MaxLoadBytes bounds the JSON value of a loads key (Members.ReportLoad).
// Consul stores a value of up to 512 KiB and sends it base64-encoded in a
// /v1/txn body that may not exceed 512 KiB either: 352 KiB of JSON is about
// 470 KiB encoded, with room for the transaction around it. A worker of
// 10,000 shards named like the default ("stream/shard-0042") with figures
// of three significant digits writes 243 to 260 KiB (1 to 0.0123 a shard),
// so default names of up to about 25 characters fit.
const MaxLoadBytes = 352 << 10

// EncodeLoad is the value of a loads key: a JSON object of shard ID to
// load, as Member.Load is written. A shard with an empty ID or a figure
// that is negative, NaN or infinite, or a value over MaxLoadBytes, wraps
// ErrInvalidArgument and names it; worker names whose loads they are.
func EncodeLoad(worker string, load map[ID]float64) ([]byte, error) {
	for id, v := range load {
		if id == "" {
			return nil, fmt.Errorf("%w: loads of worker %q: a shard id is empty", ErrInvalidArgument, worker)
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: loads of worker %q: shard %s has load %v, want a finite figure ≥ 0", ErrInvalidArgument, worker, id, v)
		}
	}
	if load == nil {
		load = map[ID]float64{}
	}
	b, err := json.Marshal(load)
	if err != nil {
		return nil, fmt.Errorf("%w: loads of worker %q: %v", ErrInvalidArgument, worker, err)
	}
	if len(b) > MaxLoadBytes {
		return nil, fmt.Errorf("%w: loads of worker %q: %d shards' figures take %d bytes of JSON, more than the %d a loads key may hold (Consul's 512 KiB value and transaction limits)",
			ErrInvalidArgument, worker, len(load), len(b), MaxLoadBytes)
	}
	return b, nil
}

// DecodeLoad reads a loads key's value, or says what is wrong with it.
func DecodeLoad(value []byte) (map[ID]float64, error) {
	var load map[ID]float64
	if err := json.Unmarshal(value, &load); err != nil {
		return nil, fmt.Errorf("malformed loads value (want a JSON object of shard id to load): %w", err)
	}
	return load, nil
}
