package consul

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// The value under P/offsets/<shard> is JSON, so that `consul kv get` shows an
// operator what is there. "v" comes first so that a future layout can be
// told from this one, and a value written by a newer binary is refused
// rather than misread.
const version1 = 1

type record struct {
	V      int    `json:"v"`
	Offset int64  `json:"offset"`
	Token  uint64 `json:"token"`
	Floor  uint64 `json:"floor"`
}

func encode(cp offsets.Checkpoint) []byte {
	b, _ := json.Marshal(record{V: version1, Offset: cp.Offset, Token: uint64(cp.Token), Floor: uint64(cp.Floor)})
	return b
}

// decode reads the value of shard s's key; a missing key (index 0) is the
// zero Checkpoint. Besides the layout it checks what the rule makes
// impossible (negative offset, token above floor, no floor), so that a
// damaged or foreign value is reported rather than obeyed.
func decode(s shard.ID, key string, v []byte, index uint64) (offsets.Checkpoint, error) {
	if index == 0 {
		return offsets.Checkpoint{}, nil
	}
	corrupt := func(format string, args ...any) (offsets.Checkpoint, error) {
		return offsets.Checkpoint{}, fmt.Errorf("%w: shard %s (key %s): %s", ErrCorrupt, s, key, fmt.Sprintf(format, args...))
	}
	var r record
	d := json.NewDecoder(bytes.NewReader(v))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return corrupt("value %.60q is not an offsets record: %v", v, err)
	}
	if d.More() {
		return corrupt("value %.60q has data after the record", v)
	}
	cp := offsets.Checkpoint{Offset: r.Offset, Token: shard.Token(r.Token), Floor: shard.Token(r.Floor)}
	switch {
	case r.V != version1:
		return corrupt("record version %d, want %d (written by a newer shardlease?)", r.V, version1)
	case cp.Offset < 0:
		return corrupt("negative offset %d", cp.Offset)
	case cp.Token > cp.Floor:
		return corrupt("token %d above floor %d", cp.Token, cp.Floor)
	case cp.Floor == 0:
		return corrupt("floor 0")
	}
	return cp, nil
}
