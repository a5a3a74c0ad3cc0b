package shard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EncodeSet writes a set of the fleet's shards compactly, as their indexes in
// ascending ranges: "0-99,150,152-160". The empty set is "". IDs may come in
// any order; the encoding of a set is unique, so two encodings are equal
// exactly when the sets are.
//
// A shard that is not one of c's IDs (see Config.IDs) is refused with an
// error wrapping ErrUnknownShard, a shard listed twice with one wrapping
// ErrInvalidArgument; both name the value.
//
// Size: at most about 6 bytes a shard for a scattered set of a 10,000-shard
// fleet, one range for a contiguous one.
func (c Config) EncodeSet(ids []ID) (string, error) {
	c = c.Normalize()
	idx := make([]int, len(ids))
	for i, id := range ids {
		n, err := c.index(id)
		if err != nil {
			return "", err
		}
		idx[i] = n
	}
	slices.Sort(idx)
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] <= idx[j]+1 {
			if idx[j+1] == idx[j] {
				return "", fmt.Errorf("%w: shard %q listed twice", ErrInvalidArgument, c.id(idx[j]))
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
// ErrUnknownShard; anything else malformed (a bad number, an empty item, a
// range that runs backwards, items out of order or overlapping) with one
// wrapping ErrInvalidArgument. The message names the offending item.
func (c Config) DecodeSet(s string) ([]ID, error) {
	if s == "" {
		return nil, nil
	}
	c = c.Normalize()
	var ids []ID
	next := 0 // the smallest index the next item may start at
	for item := range strings.SplitSeq(s, ",") {
		lo, hi, err := parseRange(item)
		if err != nil {
			return nil, err
		}
		if hi >= c.Shards {
			return nil, fmt.Errorf("%w: index %d in %q is out of range for %d shards (0..%d)",
				ErrUnknownShard, hi, item, c.Shards, c.Shards-1)
		}
		if lo < next {
			return nil, fmt.Errorf("%w: shard set item %q overlaps or precedes the item before it", ErrInvalidArgument, item)
		}
		for i := lo; i <= hi; i++ {
			ids = append(ids, c.id(i))
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
		return 0, 0, fmt.Errorf("%w: shard set range %q does not run upwards", ErrInvalidArgument, item)
	}
	return lo, hi, nil
}

// parseIndex parses a shard index written as plain decimal: digits only, no
// leading zero unless it is "0", and small enough for an int.
func parseIndex(s, item string) (int, error) {
	bad := s == "" || (len(s) > 1 && s[0] == '0') || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0
	n, err := strconv.Atoi(s)
	if bad || err != nil {
		return 0, fmt.Errorf("%w: malformed shard set item %q", ErrInvalidArgument, item)
	}
	return n, nil
}

// index returns the index of id in c's shard set; c is normalized. It is the
// inverse of id: an ID is accepted only in exactly the form IDs writes it.
func (c Config) index(id ID) (int, error) {
	digits, ok := strings.CutPrefix(string(id), c.Name+"-")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n < 0 || n >= c.Shards || c.id(n) != id {
		return 0, fmt.Errorf("%w: %q is not one of the %d shards %s-…", ErrUnknownShard, id, c.Shards, c.Name)
	}
	return n, nil
}

// id returns the ID of shard i exactly as IDs formats it; c is normalized.
func (c Config) id(i int) ID {
	width := max(len(strconv.Itoa(c.Shards-1)), 3)
	digits := strconv.Itoa(i)
	return ID(c.Name + "-" + strings.Repeat("0", max(width-len(digits), 0)) + digits)
}
