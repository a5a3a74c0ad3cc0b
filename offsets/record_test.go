package offsets

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// FuzzDecodeRecord: the value under a key-value store's P/offsets/<shard>
// is outside data — anyone with write access to the prefix may put
// anything there. DecodeRecord either
// returns a checkpoint the fencing rule allows (offset ≥ 0, token ≤ floor,
// a floor once anything was stored) that encodes back to itself, or an
// error wrapping ErrCorrupt that names the shard and the key; it never
// panics.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"v":1,"offset":42,"token":7,"floor":9}`), uint64(3))
	f.Add([]byte(`{"v":2,"offset":1,"token":1,"floor":1}`), uint64(3))
	f.Add([]byte(`{"v":1,"offset":-1,"token":1,"floor":1}`), uint64(3))
	f.Add([]byte(`{"v":1,"offset":1,"token":9,"floor":1}`), uint64(3))
	f.Add([]byte(`{"v":1,"offset":1,"token":0,"floor":0}`), uint64(3))
	f.Add([]byte(`{"v":1,"offset":1,"token":1,"floor":1,"extra":true}`), uint64(3))
	f.Add([]byte(`{"v":1,"offset":1,"token":1,"floor":1} {}`), uint64(3))
	f.Add([]byte(`{"offset":1}`), uint64(3))
	f.Add([]byte(`not json`), uint64(3))
	f.Add([]byte(nil), uint64(0))
	f.Fuzz(func(t *testing.T, v []byte, index uint64) {
		const s = shard.ID("stream/shard-003")
		const key = "fuzz/fleet/offsets/stream/shard-003"
		cp, err := DecodeRecord(s, key, v, index != 0)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), string(s)) || !strings.Contains(err.Error(), key) {
				t.Fatalf("DecodeRecord(%q) = %v: want ErrCorrupt naming shard %s and key %s", v, err, s, key)
			}
			return
		}
		if index == 0 {
			if cp != (Checkpoint{}) {
				t.Fatalf("a missing key decoded to %+v", cp)
			}
			return
		}
		if cp.Offset < 0 || cp.Token > cp.Floor || cp.Floor == 0 {
			t.Fatalf("DecodeRecord(%q) accepted %+v, which the fencing rule makes impossible", v, cp)
		}
		back, err := DecodeRecord(s, key, EncodeRecord(cp), true)
		if err != nil || back != cp {
			t.Fatalf("%+v encodes to %s, which decodes to %+v (%v)", cp, EncodeRecord(cp), back, err)
		}
	})
}

// TestValidKeyShard: an ID that would not survive as part of a key is
// refused naming it and what is wrong; a long but bounded one is not.
func TestValidKeyShard(t *testing.T) {
	for _, tc := range []struct {
		id   shard.ID
		says string
	}{
		{"a\xff", `shard "a\xff" is not valid UTF-8`},
		{"a\x00b", `shard "a\x00b" contains a NUL byte`},
		{shard.ID(strings.Repeat("x", MaxKeyShardLen+1)), "is 1025 bytes, more than 1024"},
	} {
		err := ValidKeyShard(tc.id)
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ValidKeyShard(%.20q): %v, want ErrInvalidArgument saying %q", tc.id, err, tc.says)
		}
	}
	if err := ValidKeyShard(shard.ID(strings.Repeat("x", MaxKeyShardLen))); err != nil {
		t.Errorf("an ID of exactly %d bytes: %v", MaxKeyShardLen, err)
	}
}
