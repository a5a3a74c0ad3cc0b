package fleetkeys

import "bytes"

// memo keeps what a Decoder decoded from the values of the latest
// listing, by key, while their indexes and bytes are unchanged: most of a
// large fleet's listing repeats unchanged, and decoding every value again
// on every listing was most of an assignor's listing at 1,000 workers ×
// 100,000 shards. The bytes are compared as well as the index because an
// index can come back with another value: a coordinator restored from a
// snapshot, or rebuilt, writes the same key again at an index it had
// used. The map is kept from listing to listing and updated in place; the
// keys a listing no longer has are dropped at its end.
type memo[T any] struct {
	entries map[string]*memoEntry[T]
	seen    int // keys the current pass looked up
}

type memoEntry[T any] struct {
	at   [2]uint64 // the indexes the value was decoded at
	raw  [2][]byte // the bytes it was decoded from
	set  *ShardSet // the shard set it was read against
	pass uint64    // the last pass that looked it up
	v    T
}

// get returns key's value decoded from raw at indexes at against set,
// decoding it again only when one of them changed.
func (m *memo[T]) get(pass uint64, key string, at [2]uint64, raw [2][]byte, set *ShardSet, decode func() T) T {
	if m.entries == nil {
		m.entries = map[string]*memoEntry[T]{}
	}
	e := m.entries[key]
	if e == nil {
		e = &memoEntry[T]{}
		m.entries[key] = e
		e.at, e.raw, e.set, e.v = at, raw, set, decode()
	} else if e.at != at || e.set != set || !bytes.Equal(e.raw[0], raw[0]) || !bytes.Equal(e.raw[1], raw[1]) {
		e.at, e.raw, e.set, e.v = at, raw, set, decode()
	}
	if e.pass != pass {
		e.pass = pass
		m.seen++
	}
	return e.v
}

// sweep ends pass: the keys it did not look up are dropped.
func (m *memo[T]) sweep(pass uint64) {
	if m.seen < len(m.entries) {
		for k, e := range m.entries {
			if e.pass != pass {
				delete(m.entries, k)
			}
		}
	}
	m.seen = 0
}
