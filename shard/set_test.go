package shard

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSetEncoding(t *testing.T) {
	c := Config{Shards: 200}
	all := c.IDs()
	for _, tc := range []struct {
		name string
		ids  []ID
		want string
	}{
		{"empty", nil, ""},
		{"one", []ID{all[7]}, "7"},
		{"a range", all[0:100], "0-99"},
		{"the example", slices.Concat(all[0:100], []ID{all[150]}, all[152:161]), "0-99,150,152-160"},
		{"two adjacent become a range", []ID{all[4], all[5]}, "4-5"},
		{"any order", []ID{all[9], all[1], all[8], all[0]}, "0-1,8-9"},
		{"the last shard", []ID{all[199]}, "199"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.EncodeSet(tc.ids)
			if err != nil || got != tc.want {
				t.Fatalf("EncodeSet = %q, %v; want %q", got, err, tc.want)
			}
			back, err := c.DecodeSet(got)
			if err != nil || !slices.Equal(back, slices.Sorted(slices.Values(tc.ids))) {
				t.Fatalf("DecodeSet(%q) = %v, %v", got, back, err)
			}
		})
	}
}

func TestSetEncodingErrors(t *testing.T) {
	c := Config{Shards: 20, Name: "orders"}
	for _, tc := range []struct {
		name string
		ids  []ID
		want error
		says string
	}{
		{"another fleet's name", []ID{"stream/shard-001"}, ErrUnknownShard, `"stream/shard-001"`},
		{"beyond the count", []ID{"orders-020"}, ErrUnknownShard, `"orders-020"`},
		{"not padded as IDs pads", []ID{"orders-7"}, ErrUnknownShard, `"orders-7"`},
		{"a sign", []ID{"orders-+07"}, ErrUnknownShard, `"orders-+07"`},
		{"listed twice", []ID{"orders-003", "orders-004", "orders-003"}, ErrInvalidArgument, `"orders-003" listed twice`},
	} {
		t.Run("encode "+tc.name, func(t *testing.T) {
			_, err := c.EncodeSet(tc.ids)
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
		{"20", ErrUnknownShard, "index 20"},
		{"3-25", ErrUnknownShard, "index 25"},
		{"99999999999999999999999", ErrInvalidArgument, "99999999999999999999999"},
		{"1,,2", ErrInvalidArgument, `""`},
		{",", ErrInvalidArgument, `""`},
		{"1-", ErrInvalidArgument, `"1-"`},
		{"-1", ErrInvalidArgument, `"-1"`},
		{"1-2-3", ErrInvalidArgument, `"1-2-3"`},
		{"07", ErrInvalidArgument, `"07"`},
		{" 7", ErrInvalidArgument, `" 7"`},
		{"+7", ErrInvalidArgument, `"+7"`},
		{"x", ErrInvalidArgument, `"x"`},
		{"5-5", ErrInvalidArgument, `"5-5" does not run upwards`},
		{"9-4", ErrInvalidArgument, `"9-4" does not run upwards`},
		{"4,2", ErrInvalidArgument, `"2" overlaps`},
		{"0-5,5-7", ErrInvalidArgument, `"5-7" overlaps`},
		{"3,3", ErrInvalidArgument, `"3" overlaps`},
	} {
		t.Run("decode "+tc.in, func(t *testing.T) {
			ids, err := c.DecodeSet(tc.in)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || ids != nil {
				t.Fatalf("DecodeSet(%q) = %v, %v; want %v naming %s", tc.in, ids, err, tc.want, tc.says)
			}
		})
	}
	// Accepted though not canonical: adjacent items.
	if ids, err := c.DecodeSet("1-2,3"); err != nil || len(ids) != 3 {
		t.Errorf(`DecodeSet("1-2,3") = %v, %v`, ids, err)
	}
}

// TestSetEncodingSize: an assignor's typical part at 10,000 shards (100
// scattered shards) stays well under a kilobyte, and the worst case (every
// other shard) about 5 bytes a shard.
func TestSetEncodingSize(t *testing.T) {
	c := Config{Shards: 10_000}
	all := c.IDs()
	for _, tc := range []struct {
		step, limit int
	}{{100, 600}, {2, 5 * 5000}} {
		var ids []ID
		for i := 0; i < len(all); i += tc.step {
			ids = append(ids, all[i])
		}
		s, err := c.EncodeSet(ids)
		if err != nil || len(s) > tc.limit {
			t.Errorf("every %dth of 10,000 shards: %d bytes (limit %d), %v", tc.step, len(s), tc.limit, err)
		}
	}
}

// TestSetEncodingIDs: the encoding's idea of an ID is exactly Config.IDs,
// across the widths the padding takes.
func TestSetEncodingIDs(t *testing.T) {
	for _, n := range []int{1, 9, 10, 999, 1000, 1001, 10000, MaxShards} {
		c := Config{Shards: n}.Normalize()
		for i, id := range c.IDs() {
			if got, err := c.index(id); err != nil || got != i || c.id(i) != id {
				t.Fatalf("%d shards: index(%q) = %d, %v; id(%d) = %q", n, id, got, err, i, c.id(i))
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
		c := Config{Shards: int(shards)%MaxShards + 1}
		if ids, err := c.DecodeSet(encoded); err == nil {
			if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("DecodeSet(%q) = %v: not sorted and distinct", encoded, ids)
			}
			again, err := c.EncodeSet(ids)
			if err != nil {
				t.Fatalf("EncodeSet(DecodeSet(%q)) = %v", encoded, err)
			}
			if back, err := c.DecodeSet(again); err != nil || !slices.Equal(back, ids) {
				t.Fatalf("%q → %v → %q → %v, %v", encoded, ids, again, back, err)
			}
		} else if !errors.Is(err, ErrInvalidArgument) && !errors.Is(err, ErrUnknownShard) {
			t.Fatalf("DecodeSet(%q) = %v: not a documented error", encoded, err)
		}

		// A set picked by the bytes (each a step forward from the last).
		var ids []ID
		for i, p := 0, 0; i < len(pick) && p < c.Shards; i++ {
			p += int(pick[i]) % 8
			if p < c.Shards {
				ids = append(ids, c.Normalize().id(p))
			}
			p++
		}
		s, err := c.EncodeSet(ids)
		if err != nil {
			t.Fatalf("EncodeSet(%v) = %v", ids, err)
		}
		if back, err := c.DecodeSet(s); err != nil || !slices.Equal(back, ids) {
			t.Fatalf("%v → %q → %v, %v", ids, s, back, err)
		}
	})
}
