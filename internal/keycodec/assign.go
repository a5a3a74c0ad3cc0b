package keycodec

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// assignmentValue is the stored form of a shard.Assignment: the shard sets
// as compact index ranges, so that a worker's key stays small at 10,000
// shards, and the reasons grouped by reason and source.
type assignmentValue struct {
	Epoch   shard.Token `json:"epoch"`
	Shards  string      `json:"shards"`
	Free    string      `json:"free,omitempty"`
	AsOf    uint64      `json:"as_of,omitempty"`
	Why     []whyValue  `json:"why,omitempty"`
	Release []whyValue  `json:"release,omitempty"`
	Loads   bool        `json:"loads,omitempty"`
	Standby string      `json:"standby,omitempty"`
	Close   string      `json:"close,omitempty"`
}

// whyValue is one Why and its shards as index ranges.
type whyValue struct {
	shard.Why
	Shards string `json:"shards"`
}

// EncodeAssignment returns the value of an assignment key for a (its
// Memory is not part of it): JSON {"epoch", "shards", "free", "as_of",
// "why", "release", "loads", "standby", "close"} with the shard sets as EncodeSet writes them,
// sorted index ranges ("0-99,150"), and each reason with its shards. A
// shard outside c wraps shard.ErrUnknownShard, a shard listed twice
// shard.ErrInvalidArgument.
func EncodeAssignment(c shard.Config, a shard.Assignment) ([]byte, error) {
	set, err := EncodeSet(c, a.Shards)
	if err != nil {
		return nil, err
	}
	free, err := EncodeSet(c, a.Free)
	if err != nil {
		return nil, fmt.Errorf("free shards: %w", err)
	}
	why, err := encodeWhys(c, a.Why)
	if err != nil {
		return nil, err
	}
	release, err := encodeWhys(c, a.Release)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	standby, err := EncodeSet(c, a.Standby)
	if err != nil {
		return nil, fmt.Errorf("standby shards: %w", err)
	}
	closing, err := EncodeSet(c, a.Close)
	if err != nil {
		return nil, fmt.Errorf("shards to close: %w", err)
	}
	return json.Marshal(assignmentValue{Epoch: a.Epoch, Shards: set, Free: free, AsOf: a.AsOf, Why: why, Release: release, Loads: a.Loads, Standby: standby, Close: closing})
}

// encodeWhys groups shards by their Why, each group as index ranges,
// sorted by ranges so that equal maps encode equally.
func encodeWhys(c shard.Config, whys map[shard.ID]shard.Why) ([]whyValue, error) {
	if len(whys) == 0 {
		return nil, nil
	}
	byWhy := map[shard.Why][]shard.ID{}
	for id, w := range whys {
		byWhy[w] = append(byWhy[w], id)
	}
	out := make([]whyValue, 0, len(byWhy))
	for _, w := range slices.SortedFunc(maps.Keys(byWhy), func(a, b shard.Why) int { return strings.Compare(a.String(), b.String()) }) {
		set, err := EncodeSet(c, byWhy[w])
		if err != nil {
			return nil, fmt.Errorf("reason %q: %w", w, err)
		}
		out = append(out, whyValue{Why: w, Shards: set})
	}
	slices.SortFunc(out, func(x, y whyValue) int { return strings.Compare(x.Shards, y.Shards) })
	return out, nil
}

// DecodeAssignment reads an assignment key's value written by
// EncodeAssignment for the same config; Shards is nil for an empty set.
// The error says what is wrong with the value; it never panics, whatever
// the value.
func DecodeAssignment(c shard.Config, value []byte) (shard.Assignment, error) {
	var v assignmentValue
	if err := json.Unmarshal(value, &v); err != nil {
		return shard.Assignment{}, fmt.Errorf("malformed assignment value (want JSON {epoch, shards, free, as_of, why, release, loads, standby, close}): %w", err)
	}
	if v.Epoch == 0 {
		return shard.Assignment{}, fmt.Errorf("assignment value names no epoch: no assignor wrote it")
	}
	ids, err := DecodeSet(c, v.Shards)
	if err != nil {
		return shard.Assignment{}, fmt.Errorf("assignment value's shards %q: %w", v.Shards, err)
	}
	free, err := DecodeSet(c, v.Free)
	if err != nil {
		return shard.Assignment{}, fmt.Errorf("assignment value's free shards %q: %w", v.Free, err)
	}
	why, err := decodeWhys(c, "why", v.Why)
	if err != nil {
		return shard.Assignment{}, err
	}
	release, err := decodeWhys(c, "release", v.Release)
	if err != nil {
		return shard.Assignment{}, err
	}
	standby, err := DecodeSet(c, v.Standby)
	if err != nil {
		return shard.Assignment{}, fmt.Errorf("assignment value's standby shards %q: %w", v.Standby, err)
	}
	closing, err := DecodeSet(c, v.Close)
	if err != nil {
		return shard.Assignment{}, fmt.Errorf("assignment value's shards to close %q: %w", v.Close, err)
	}
	return shard.Assignment{Epoch: v.Epoch, Shards: ids, Free: free, AsOf: v.AsOf, Why: why, Release: release, Loads: v.Loads, Standby: standby, Close: closing}, nil
}

// decodeWhys reads the reasons of one field (why or release) back into a
// map of shard to reason; field names it in an error.
func decodeWhys(c shard.Config, field string, vs []whyValue) (map[shard.ID]shard.Why, error) {
	var whys map[shard.ID]shard.Why
	for _, wv := range vs {
		ids, err := DecodeSet(c, wv.Shards)
		if err != nil {
			return nil, fmt.Errorf("assignment value's %s shards for %q: %w", field, wv.Why, err)
		}
		if whys == nil {
			whys = map[shard.ID]shard.Why{}
		}
		for _, id := range ids {
			whys[id] = wv.Why
		}
	}
	return whys, nil
}
