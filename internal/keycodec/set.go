package keycodec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// EncodeSet writes a set of c's shards compactly, as their indexes in
// ascending ranges: "0-99,150,152-160". The empty set is "". IDs may come in
// any order; the encoding of a set is unique, so two encodings are equal
// exactly when the sets are.
//
// A shard that is not one of c's IDs (see shard.Config.IDs) is refused with
// an error wrapping shard.ErrUnknownShard, a shard listed twice with one
// wrapping shard.ErrInvalidArgument; both name the value.
//
// Size: at most about 6 bytes a shard for a scattered set of a 10,000-shard
// fleet, one range for a contiguous one.
func EncodeSet(c shard.Config, ids []shard.ID) (string, error) {
	n := namesOf(c)
	idx := make([]int, len(ids))
	for i, id := range ids {
		k, err := n.index(id)
		if err != nil {
			return "", err
		}
		idx[i] = k
	}
	slices.Sort(idx)
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] <= idx[j]+1 {
			if idx[j+1] == idx[j] {
				return "", fmt.Errorf("%w: shard %q listed twice", shard.ErrInvalidArgument, n.id(idx[j]))
			}
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String(), nil
}

// DecodeSet reads what EncodeSet wrote and returns the shards in ascending
// order (nil for ""). It accepts comma-separated items, each an index "7" or
// a range "3-9" with its start below its end, in ascending order without
// overlap; adjacent ranges ("1-2,3") are accepted. Numbers are plain decimal
// without sign or leading zeros.
//
// An index at or beyond the shard count is refused with an error wrapping
// shard.ErrUnknownShard; anything else malformed (a bad number, an empty
// item, a range that runs backwards, items out of order or overlapping) with
// one wrapping shard.ErrInvalidArgument. The message names the offending
// item.
func DecodeSet(c shard.Config, s string) ([]shard.ID, error) {
	if s == "" {
		return nil, nil
	}
	n := namesOf(c)
	var ids []shard.ID
	next := 0 // the smallest index the next item may start at
	for item := range strings.SplitSeq(s, ",") {
		lo, hi, err := parseRange(item)
		if err != nil {
			return nil, err
		}
		if lo < next {
			return nil, fmt.Errorf("%w: shard set item %q overlaps or precedes the item before it", shard.ErrInvalidArgument, item)
		}
		if i, ok := n.covers(lo, hi); !ok {
			return nil, fmt.Errorf("%w: index %d in %q is none of the fleet's shards (%s)",
				shard.ErrUnknownShard, i, item, n)
		}
		for i := lo; i <= hi; i++ {
			ids = append(ids, n.id(i))
		}
		next = hi + 1
	}
	return ids, nil
}

// parseRange parses one item of an encoded set: "7" or "3-9".
func parseRange(item string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(item, "-")
	if lo, err = parseIndex(a, item); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = parseIndex(b, item); err != nil {
		return 0, 0, err
	}
	if hi <= lo {
		return 0, 0, fmt.Errorf("%w: shard set range %q does not run upwards", shard.ErrInvalidArgument, item)
	}
	return lo, hi, nil
}

// parseIndex parses a shard index written as plain decimal: digits only, no
// leading zero unless it is "0", and small enough for an int.
func parseIndex(s, item string) (int, error) {
	bad := s == "" || (len(s) > 1 && s[0] == '0') || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0
	n, err := strconv.Atoi(s)
	if bad || err != nil {
		return 0, fmt.Errorf("%w: malformed shard set item %q", shard.ErrInvalidArgument, item)
	}
	return n, nil
}

// covers reports whether every index lo..hi is one of the fleet's, and
// otherwise names one that is not: hi when it is not, else the first.
func (n names) covers(lo, hi int) (int, bool) {
	if !n.has(hi) {
		return hi, false
	}
	for i := lo; i <= hi; {
		end := -1
		for _, s := range n.segs {
			if s.Base <= i && i < s.Base+s.Shards {
				end = s.Base + s.Shards
			}
		}
		if end < 0 {
			return i, false
		}
		i = end
	}
	return 0, true
}
