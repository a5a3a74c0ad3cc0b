package rebalance

import (
	"github.com/cespare/xxhash/v2"
	"github.com/shardlease/shardlease/shard"
)

// scorer computes rendezvous scores. It reuses one buffer so that scoring,
// the inner loop of placement, does not allocate, and it keeps the shard
// prefix in place while placement scores one shard against every member.
type scorer struct {
	buf    []byte
	prefix int // length of the shard prefix in buf
}

// score is the rendezvous (highest-random-weight) score of member m for shard
// s: xxhash of s, a zero byte, and m. The zero byte keeps ("ab","c") and
// ("a","bc") apart. Every worker must compute exactly this; see the package
// doc.
func (sc *scorer) score(s shard.ID, m string) uint64 {
	sc.setShard(s)
	return sc.member(m)
}

// setShard fixes the shard that member scores against.
func (sc *scorer) setShard(s shard.ID) {
	sc.buf = append(append(sc.buf[:0], s...), 0)
	sc.prefix = len(sc.buf)
}

// member is score(s, m) for the shard s of the last setShard.
func (sc *scorer) member(m string) uint64 {
	sc.buf = append(sc.buf[:sc.prefix], m...)
	return xxhash.Sum64(sc.buf)
}
