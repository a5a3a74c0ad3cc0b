package rebalance

import (
	"github.com/cespare/xxhash/v2"
	"github.com/shardlease/shardlease/shard"
)

// scorer computes rendezvous scores, reusing one buffer so that scoring
// does not allocate.
type scorer struct{ buf []byte }

// score is the rendezvous (highest-random-weight) score of member m for shard
// s: xxhash of s, a zero byte, and m. The zero byte keeps ("ab","c") and
// ("a","bc") apart.
func (sc *scorer) score(s shard.ID, m string) uint64 {
	sc.buf = append(append(append(sc.buf[:0], s...), 0), m...)
	return xxhash.Sum64(sc.buf)
}
