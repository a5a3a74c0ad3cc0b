package bolt

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

func TestCodecRoundTrip(t *testing.T) {
	for _, cp := range []offsets.Checkpoint{
		{Offset: 0, Token: 0, Floor: 1},
		{Offset: 100, Token: 5, Floor: 7},
		{Offset: 1<<63 - 1, Token: 1<<64 - 1, Floor: 1<<64 - 1},
	} {
		got, err := decode("s", encode(cp))
		if err != nil || got != cp {
			t.Errorf("decode(encode(%+v)) = %+v, %v", cp, got, err)
		}
	}
	if got, err := decode("s", nil); err != nil || got != (offsets.Checkpoint{}) {
		t.Errorf("decode(nil) = %+v, %v; want the zero Checkpoint", got, err)
	}
}

// corrupt returns a valid record of cp with edit applied.
func corrupt(cp offsets.Checkpoint, edit func([]byte) []byte) []byte { return edit(encode(cp)) }

var good = offsets.Checkpoint{Offset: 100, Token: 5, Floor: 7}

var badValues = []struct {
	name  string
	value []byte
	msg   string
}{
	{"empty", []byte{}, "empty value"},
	{"unknown version", corrupt(good, func(v []byte) []byte { v[0] = 2; return v }), "record version 2"},
	{"short", corrupt(good, func(v []byte) []byte { return v[:10] }), "10 bytes"},
	{"long", corrupt(good, func(v []byte) []byte { return append(v, 0) }), "26 bytes"},
	{"json", []byte(`{"offset":1}`), "version 123"},
	{"negative offset", encode(offsets.Checkpoint{Offset: -1, Token: 1, Floor: 1}), "negative offset -1"},
	{"token above floor", encode(offsets.Checkpoint{Offset: 1, Token: 9, Floor: 8}), "token 9 above floor 8"},
	{"no floor", encode(offsets.Checkpoint{Offset: 1}), "floor 0"},
}

func TestDecodeCorrupt(t *testing.T) {
	for _, tt := range badValues {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode("stream/shard-003", tt.value)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "shard stream/shard-003") ||
				!strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("decode = %v; want ErrCorrupt naming the shard and saying %q", err, tt.msg)
			}
		})
	}
}

// A corrupt value in the file is reported for its shard by every method,
// left as it is, and does not disturb other shards.
func TestCorruptValueInFile(t *testing.T) {
	ctx := context.Background()
	const bad, fine = shard.ID("stream/shard-003"), shard.ID("stream/shard-004")
	for _, tt := range badValues {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "offsets.db")
			st, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			if err := st.Commit(ctx, fine, 1, 10); err != nil {
				t.Fatal(err)
			}
			put(t, st.db, bad, tt.value)

			for name, err := range map[string]error{
				"Load":   func() error { _, err := st.Load(ctx, bad); return err }(),
				"Commit": st.Commit(ctx, bad, 100, 1),
				"Fence":  st.Fence(ctx, bad, 100),
			} {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), string(bad)) {
					t.Errorf("%s: %v; want ErrCorrupt naming %s", name, err, bad)
				}
			}
			if got := get(t, st.db, bad); string(got) != string(tt.value) {
				t.Errorf("the corrupt value was overwritten: %x", got)
			}
			if err := st.Commit(ctx, fine, 2, 20); err != nil {
				t.Errorf("other shard: Commit: %v", err)
			}
			if cp, err := st.Load(ctx, fine); err != nil || cp != (offsets.Checkpoint{Offset: 20, Token: 2, Floor: 2}) {
				t.Errorf("other shard: Load = %+v, %v", cp, err)
			}
		})
	}
}

func put(t *testing.T, db *bbolt.DB, s shard.ID, v []byte) {
	t.Helper()
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketName).Put([]byte(s), v) }); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, db *bbolt.DB, s shard.ID) []byte {
	t.Helper()
	var v []byte
	if err := db.View(func(tx *bbolt.Tx) error {
		v = append([]byte(nil), tx.Bucket(bucketName).Get([]byte(s))...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}
