package offsets

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/shardlease/shardlease/shard"
)

// The value a key-value store (offsets/consul, offsets/etcd) keeps under a
// shard's key is JSON, so that an operator's `consul kv get` or `etcdctl
// get` shows what is there. "v" comes first so that a future layout can be
// told from this one, and a value written by a newer binary is refused
// rather than misread.
const recordVersion = 1

type record struct {
	V      int    `json:"v"`
	Offset int64  `json:"offset"`
	Token  uint64 `json:"token"`
	Floor  uint64 `json:"floor"`
}

// EncodeRecord is cp as a key's value.
func EncodeRecord(cp Checkpoint) []byte {
	b, _ := json.Marshal(record{V: recordVersion, Offset: cp.Offset, Token: uint64(cp.Token), Floor: uint64(cp.Floor)})
	return b
}

// DecodeRecord reads the value v of shard s's key (named key in errors);
// a key that does not exist (exists false) is the zero Checkpoint. Besides
// the layout it checks what the rule makes impossible (negative offset,
// token above floor, no floor), so that a damaged or foreign value is
// reported, wrapping ErrCorrupt, rather than obeyed.
func DecodeRecord(s shard.ID, key string, v []byte, exists bool) (Checkpoint, error) {
	if !exists {
		return Checkpoint{}, nil
	}
	corrupt := func(format string, args ...any) (Checkpoint, error) {
		return Checkpoint{}, fmt.Errorf("%w: shard %s (key %s): %s", ErrCorrupt, s, key, fmt.Sprintf(format, args...))
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
	cp := Checkpoint{Offset: r.Offset, Token: shard.Token(r.Token), Floor: shard.Token(r.Floor)}
	switch {
	case r.V != recordVersion:
		return corrupt("record version %d, want %d (written by a newer shardlease?)", r.V, recordVersion)
	case cp.Offset < 0:
		return corrupt("negative offset %d", cp.Offset)
	case cp.Token > cp.Floor:
		return corrupt("token %d above floor %d", cp.Token, cp.Floor)
	case cp.Floor == 0:
		return corrupt("floor 0")
	}
	return cp, nil
}
