package bolt

import (
	"encoding/binary"
	"fmt"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// The record layout. The version byte comes first so that a future layout
// can be read alongside this one, and so that a file written by a newer
// binary is refused with a clear error rather than misread.
const (
	version1  = 1
	recordLen = 1 + 3*8 // version, offset, token, floor
)

func encode(cp offsets.Checkpoint) []byte {
	v := make([]byte, recordLen) // bbolt keeps the slice until the transaction ends
	v[0] = version1
	binary.BigEndian.PutUint64(v[1:], uint64(cp.Offset))
	binary.BigEndian.PutUint64(v[9:], uint64(cp.Token))
	binary.BigEndian.PutUint64(v[17:], uint64(cp.Floor))
	return v
}

// decode reads the record of shard s; nil (no key) is the zero Checkpoint.
// Besides the layout it checks what the rule makes impossible (a negative
// offset, a token above the floor, a stored record with no floor), so that
// a damaged value is reported rather than obeyed.
func decode(s shard.ID, v []byte) (offsets.Checkpoint, error) {
	if v == nil {
		return offsets.Checkpoint{}, nil
	}
	corrupt := func(format string, args ...any) (offsets.Checkpoint, error) {
		return offsets.Checkpoint{}, fmt.Errorf("%w: shard %s: %s", ErrCorrupt, s, fmt.Sprintf(format, args...))
	}
	switch {
	case len(v) == 0:
		return corrupt("empty value")
	case v[0] != version1:
		return corrupt("record version %d, want %d (written by a newer shardlease?)", v[0], version1)
	case len(v) != recordLen:
		return corrupt("record of %d bytes, want %d", len(v), recordLen)
	}
	cp := offsets.Checkpoint{
		Offset: int64(binary.BigEndian.Uint64(v[1:])),
		Token:  shard.Token(binary.BigEndian.Uint64(v[9:])),
		Floor:  shard.Token(binary.BigEndian.Uint64(v[17:])),
	}
	if p := offsets.StoredProblem(cp); p != "" {
		return corrupt("%s", p)
	}
	return cp, nil
}
