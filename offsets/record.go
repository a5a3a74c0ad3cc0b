package offsets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

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
	if r.V != recordVersion {
		return corrupt("record version %d, want %d (written by a newer shardlease?)", r.V, recordVersion)
	}
	if p := StoredProblem(cp); p != "" {
		return corrupt("%s", p)
	}
	return cp, nil
}

// StoredProblem says what makes cp impossible as a stored checkpoint
// under the fencing rule — a negative offset, a token above the floor, no
// floor — or "" when nothing does. Every store that decodes bytes it did
// not just write checks it, so that a damaged or foreign value is
// reported (ErrCorrupt) rather than obeyed.
func StoredProblem(cp Checkpoint) string {
	switch {
	case cp.Offset < 0:
		return fmt.Sprintf("negative offset %d", cp.Offset)
	case cp.Token > cp.Floor:
		return fmt.Sprintf("token %d above floor %d", cp.Token, cp.Floor)
	case cp.Floor == 0:
		return "floor 0"
	}
	return ""
}

// MaxKeyShardLen bounds a shard ID in bytes in a store that makes it part
// of a key (offsets/consul, offsets/etcd): an ID that long is a bug, not a
// shard.
const MaxKeyShardLen = 1024

// ValidKeyShard refuses, wrapping shard.ErrInvalidArgument, a shard ID
// that would not survive as part of a key unchanged: invalid UTF-8 (a
// JSON or gRPC request would replace it, so two IDs could share a key), a
// NUL byte, more than MaxKeyShardLen bytes.
func ValidKeyShard(s shard.ID) error {
	switch {
	case !utf8.ValidString(string(s)):
		return fmt.Errorf("offsets: shard %q is not valid UTF-8: %w", s, shard.ErrInvalidArgument)
	case strings.IndexByte(string(s), 0) >= 0:
		return fmt.Errorf("offsets: shard %q contains a NUL byte: %w", s, shard.ErrInvalidArgument)
	case len(s) > MaxKeyShardLen:
		return fmt.Errorf("offsets: shard %.40q… is %d bytes, more than %d: %w", s, len(s), MaxKeyShardLen, shard.ErrInvalidArgument)
	}
	return nil
}
