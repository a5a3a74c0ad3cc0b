package rebalance

import "sync"

// scratch is the per-shard working memory of one Step, reused by the next
// (through a sync.Pool, so concurrent Steps each get their own). At
// 100,000 shards it is megabytes a step: allocating and zeroing it anew,
// and the collections that caused, were a steady step's tail.
type scratch struct {
	i32  [][]int32
	used int // how many of i32 this Step has taken
	u8   []uint8
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// int32s returns a slice of n int32 whose contents are undefined: the
// caller sets every element it reads.
func (sc *scratch) int32s(n int) []int32 {
	if sc.used == len(sc.i32) {
		sc.i32 = append(sc.i32, nil)
	}
	b := sc.i32[sc.used]
	if cap(b) < n {
		b = make([]int32, n)
		sc.i32[sc.used] = b
	}
	sc.used++
	return b[:n]
}

// uint8s returns a slice of n zero uint8.
func (sc *scratch) uint8s(n int) []uint8 {
	if cap(sc.u8) < n {
		sc.u8 = make([]uint8, n)
	}
	b := sc.u8[:n]
	clear(b)
	return b
}

// release returns sc to the pool; nothing of it may be used after.
func (sc *scratch) release() {
	sc.used = 0
	scratchPool.Put(sc)
}
