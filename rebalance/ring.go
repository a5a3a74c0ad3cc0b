package rebalance

import (
	"cmp"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/shardlease/shardlease/shard"
)

// ringPoints is how many points each member with room has on the ring.
// More points spread the first choices more evenly; the quotas bound the
// counts whatever the spread, so a few suffice.
const ringPoints = 8

// placeFree gives every shard without a target (target[i] == -1), in shard
// order, to a member with room, and takes the room: consistent hashing with
// bounded loads. Each member with room has ringPoints points on a ring of
// 64-bit hashes (xxhash of its ID, a zero byte and the point's number); a
// shard (at the xxhash of its ID) goes to the first point at or after it,
// wrapping around, whose member still has room. A member that fills up
// leaves the ring; a union-find over the points skips its points, so a
// placement costs O(log P) for P points however full the ring is.
//
// Rendezvous over every member with room would cost O(F·W): 10^8 hashes
// for 100,000 free shards and 1,000 members, seconds of CPU
// (docs/benchmarks.md, "Assignor step"); this costs O(F log W + W log W).
// The trade-off: a free shard's member depends on which members still have
// room when its turn comes, not on the shard alone. Nothing outside one
// Step relies on where a free shard goes (one assignor decides, and what it
// decided is in the keys it wrote); the quotas carry the balance guarantee.
//
// Shards stay without a target when no member has room left.
func placeFree(shards []shard.ID, ids []string, target []int32, room []int) {
	var open []int
	for m, r := range room {
		if r > 0 {
			open = append(open, m)
		}
	}
	if len(open) == 0 {
		return
	}
	type point struct {
		pos    uint64
		member int32 // index in open
		n      int32 // the point's number
	}
	pts := make([]point, 0, len(open)*ringPoints)
	var buf []byte
	for k, m := range open {
		buf = append(append(buf[:0], ids[m]...), 0)
		for n := range ringPoints {
			pts = append(pts, point{xxhash.Sum64(append(buf, byte(n))), int32(k), int32(n)})
		}
	}
	slices.SortFunc(pts, func(a, b point) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		if c := cmp.Compare(a.member, b.member); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})

	np := int32(len(pts))
	pos := make([]uint64, np)
	at := make([]int32, np)   // the open member of each point
	mine := make([]int32, np) // member k's points: mine[k*ringPoints:][:ringPoints]
	up := make([]int32, np+1) // up[j] == j: point j is on the ring; np wraps around
	for j, p := range pts {
		pos[j], at[j] = p.pos, p.member
		mine[p.member*ringPoints+p.n] = int32(j)
		up[j] = int32(j)
	}
	up[np] = np
	find := func(j int32) int32 { // the first point at or after j still on the ring, or np
		for up[j] != j {
			up[j] = up[up[j]]
			j = up[j]
		}
		return j
	}

	for i, s := range shards {
		if target[i] != -1 {
			continue // placed, or to be left (see leave)
		}
		j, _ := slices.BinarySearch(pos, xxhash.Sum64String(string(s)))
		if j := find(int32(j)); j < np {
			target[i] = place(open, at[j], room, up, mine)
		} else if j := find(0); j < np {
			target[i] = place(open, at[j], room, up, mine)
		} else {
			return // every member is full
		}
	}
}

// place gives one shard to open member k and takes its points off the ring
// when that fills it; it returns the member's index.
func place(open []int, k int32, room []int, up, mine []int32) int32 {
	m := open[k]
	if room[m]--; room[m] == 0 {
		for _, j := range mine[k*ringPoints:][:ringPoints] {
			up[j] = j + 1
		}
	}
	return int32(m)
}
