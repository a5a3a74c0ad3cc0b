package bolt

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// FuzzDecode: a checkpoint record read from the bbolt file (which a disk,
// a crash or another program may have damaged) either decodes to a
// checkpoint the fencing rule allows and encodes back to the same bytes,
// or gives an error wrapping ErrCorrupt that names the shard; it never
// panics.
func FuzzDecode(f *testing.F) {
	f.Add(encode(offsets.Checkpoint{Offset: 42, Token: 7, Floor: 9}))
	f.Add(encode(offsets.Checkpoint{Offset: -1, Token: 1, Floor: 1}))
	f.Add(encode(offsets.Checkpoint{Offset: 1, Token: 9, Floor: 1}))
	f.Add(encode(offsets.Checkpoint{}))
	f.Add([]byte{2, 0, 0})
	f.Add([]byte{1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		const s = shard.ID("stream/shard-003")
		cp, err := decode(s, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), string(s)) {
				t.Fatalf("decode(%x) = %v: want ErrCorrupt naming shard %s", v, err, s)
			}
			return
		}
		if v == nil {
			if cp != (offsets.Checkpoint{}) {
				t.Fatalf("a missing record decoded to %+v", cp)
			}
			return
		}
		if cp.Offset < 0 || cp.Token > cp.Floor || cp.Floor == 0 {
			t.Fatalf("decode(%x) accepted %+v, which the fencing rule makes impossible", v, cp)
		}
		if string(encode(cp)) != string(v) {
			t.Fatalf("decode(%x) = %+v, which encodes to %x", v, cp, encode(cp))
		}
	})
}
