package keycodec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

func TestSetEncoding(t *testing.T) {
	c := shard.Config{Shards: 200}
	all := c.IDs()
	for _, tc := range []struct {
		name string
		ids  []shard.ID
		want string
	}{
		{"empty", nil, ""},
		{"one", []shard.ID{all[7]}, "7"},
		{"a range", all[0:100], "0-99"},
		{"the example", slices.Concat(all[0:100], []shard.ID{all[150]}, all[152:161]), "0-99,150,152-160"},
		{"two adjacent become a range", []shard.ID{all[4], all[5]}, "4-5"},
		{"any order", []shard.ID{all[9], all[1], all[8], all[0]}, "0-1,8-9"},
		{"the last shard", []shard.ID{all[199]}, "199"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeSet(c, tc.ids)
			if err != nil || got != tc.want {
				t.Fatalf("EncodeSet = %q, %v; want %q", got, err, tc.want)
			}
			back, err := DecodeSet(c, got)
			if err != nil || !slices.Equal(back, slices.Sorted(slices.Values(tc.ids))) {
				t.Fatalf("DecodeSet(%q) = %v, %v", got, back, err)
			}
		})
	}
}

func TestSetEncodingErrors(t *testing.T) {
	c := shard.Config{Shards: 20, Name: "orders"}
	for _, tc := range []struct {
		name string
		ids  []shard.ID
		want error
		says string
	}{
		{"another fleet's name", []shard.ID{"stream/shard-001"}, shard.ErrUnknownShard, `"stream/shard-001"`},
		{"beyond the count", []shard.ID{"orders-020"}, shard.ErrUnknownShard, `"orders-020"`},
		{"not padded as IDs pads", []shard.ID{"orders-7"}, shard.ErrUnknownShard, `"orders-7"`},
		{"a sign", []shard.ID{"orders-+07"}, shard.ErrUnknownShard, `"orders-+07"`},
		{"listed twice", []shard.ID{"orders-003", "orders-004", "orders-003"}, shard.ErrInvalidArgument, `"orders-003" listed twice`},
	} {
		t.Run("encode "+tc.name, func(t *testing.T) {
			_, err := EncodeSet(c, tc.ids)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("EncodeSet(%v) = %v; want %v naming %s", tc.ids, err, tc.want, tc.says)
			}
		})
	}
	for _, tc := range []struct {
		in   string
		want error
		says string
	}{
		{"20", shard.ErrUnknownShard, "index 20"},
		{"3-25", shard.ErrUnknownShard, "index 25"},
		{"99999999999999999999999", shard.ErrInvalidArgument, "99999999999999999999999"},
		{"1,,2", shard.ErrInvalidArgument, `""`},
		{",", shard.ErrInvalidArgument, `""`},
		{"1-", shard.ErrInvalidArgument, `"1-"`},
		{"-1", shard.ErrInvalidArgument, `"-1"`},
		{"1-2-3", shard.ErrInvalidArgument, `"1-2-3"`},
		{"07", shard.ErrInvalidArgument, `"07"`},
		{" 7", shard.ErrInvalidArgument, `" 7"`},
		{"+7", shard.ErrInvalidArgument, `"+7"`},
		{"x", shard.ErrInvalidArgument, `"x"`},
		{"5-5", shard.ErrInvalidArgument, `"5-5" does not run upwards`},
		{"9-4", shard.ErrInvalidArgument, `"9-4" does not run upwards`},
		{"4,2", shard.ErrInvalidArgument, `"2" overlaps`},
		{"0-5,5-7", shard.ErrInvalidArgument, `"5-7" overlaps`},
		{"3,3", shard.ErrInvalidArgument, `"3" overlaps`},
	} {
		t.Run("decode "+tc.in, func(t *testing.T) {
			ids, err := DecodeSet(c, tc.in)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || ids != nil {
				t.Fatalf("DecodeSet(%q) = %v, %v; want %v naming %s", tc.in, ids, err, tc.want, tc.says)
			}
		})
	}
	// Accepted though not canonical: adjacent items.
	if ids, err := DecodeSet(c, "1-2,3"); err != nil || len(ids) != 3 {
		t.Errorf(`DecodeSet("1-2,3") = %v, %v`, ids, err)
	}
}

// TestSetEncodingSize: an assignor's typical part at 10,000 shards (100
// scattered shards) stays well under a kilobyte, and the worst case (every
// other shard) about 5 bytes a shard.
func TestSetEncodingSize(t *testing.T) {
	c := shard.Config{Shards: 10_000}
	all := c.IDs()
	for _, tc := range []struct {
		step, limit int
	}{{100, 600}, {2, 5 * 5000}} {
		var ids []shard.ID
		for i := 0; i < len(all); i += tc.step {
			ids = append(ids, all[i])
		}
		s, err := EncodeSet(c, ids)
		if err != nil || len(s) > tc.limit {
			t.Errorf("every %dth of 10,000 shards: %d bytes (limit %d), %v", tc.step, len(s), tc.limit, err)
		}
	}
}

// TestSetEncodingIDs: the encoding's idea of an ID is exactly
// shard.Config.IDs, across the widths the padding takes: keycodec rebuilds
// the format rather than asking shard for it, and this is what keeps the
// two from drifting apart.
func TestSetEncodingIDs(t *testing.T) {
	for _, name := range []string{"", "orders"} { // the default stem, and one of the fleet's own
		for _, n := range []int{1, 9, 10, 999, 1000, 1001, 10000, shard.MaxShards} {
			c := shard.Config{Shards: n, Name: name}
			names := namesOf(c)
			for i, id := range c.IDs() {
				if got, err := names.index(id); err != nil || got != i || names.id(i) != id {
					t.Fatalf("%d shards: index(%q) = %d, %v; id(%d) = %q", n, id, got, err, i, names.id(i))
				}
			}
		}
	}
}

// FuzzSetEncoding: any string DecodeSet accepts is a sorted set of distinct
// fleet IDs whose encoding decodes to the same set; every set of IDs
// round-trips through EncodeSet; nothing panics.
func FuzzSetEncoding(f *testing.F) {
	f.Add(uint16(100), "0-99,150,152-160", []byte{1, 2, 3, 200})
	f.Add(uint16(10), "", []byte{})
	f.Add(uint16(1), "0", []byte{0, 0})
	f.Add(uint16(1000), "1-2,3,999", []byte{255, 254, 0, 1, 2})
	f.Add(uint16(0), "0", []byte{1})
	f.Fuzz(func(t *testing.T, shards uint16, encoded string, pick []byte) {
		c := shard.Config{Shards: int(shards)%shard.MaxShards + 1}
		names := namesOf(c)
		if ids, err := DecodeSet(c, encoded); err == nil {
			if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("DecodeSet(%q) = %v: not sorted and distinct", encoded, ids)
			}
			again, err := EncodeSet(c, ids)
			if err != nil {
				t.Fatalf("EncodeSet(DecodeSet(%q)) = %v", encoded, err)
			}
			if back, err := DecodeSet(c, again); err != nil || !slices.Equal(back, ids) {
				t.Fatalf("%q → %v → %q → %v, %v", encoded, ids, again, back, err)
			}
		} else if !errors.Is(err, shard.ErrInvalidArgument) && !errors.Is(err, shard.ErrUnknownShard) {
			t.Fatalf("DecodeSet(%q) = %v: not a documented error", encoded, err)
		}

		// A set picked by the bytes (each a step forward from the last).
		var ids []shard.ID
		for i, p := 0, 0; i < len(pick) && p < c.Shards; i++ {
			p += int(pick[i]) % 8
			if p < c.Shards {
				ids = append(ids, names.id(p))
			}
			p++
		}
		s, err := EncodeSet(c, ids)
		if err != nil {
			t.Fatalf("EncodeSet(%v) = %v", ids, err)
		}
		if back, err := DecodeSet(c, s); err != nil || !slices.Equal(back, ids) {
			t.Fatalf("%v → %q → %v, %v", ids, s, back, err)
		}
	})
}
