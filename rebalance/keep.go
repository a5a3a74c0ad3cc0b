package rebalance

import (
	"cmp"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// keep returns, for every shard, the member that keeps it (-1 for the shards
// nobody keeps) and each member's room left under its quota.
//
// owner[i] is the member shard i counts for (its holder, or the member
// it is assigned to and not yet taken by), or -1; caps are the quotas.
// Every member keeps min(count, quota) of its shards, preferring its
// highest-scoring ones: keeping is what makes a decision sticky, and
// choosing by score rather than by shard order spreads what is shed evenly
// over the shard space. rank orders what shedding costs, whatever the
// scores, lowest kept first (step.keepRank): a shard a member actually
// holds is kept before an assigned free one, whose shedding costs nothing,
// while a held one's costs a hand-off.
// target is written into dst (its length must be at least len(shards)).
func keep(shards []shard.ID, ids []string, owner []int32, rank func(i int) int, caps []int, dst []int32) (target []int32, room []int) {
	var sc scorer
	room = slices.Clone(caps)
	for _, o := range owner {
		if o >= 0 {
			room[o]--
		}
	}
	if !slices.ContainsFunc(room, func(r int) bool { return r < 0 }) {
		// Nobody is over its quota (the steady state): everyone keeps all.
		return append(dst[:0], owner...), room
	}
	target = dst[:len(shards)]
	for i := range target {
		target[i] = -1
	}
	room = slices.Clone(caps)

	// Group shards by owner (a counting sort into one slice, so that this
	// costs three allocations, not one per member); order within a group is
	// shard order.
	start := make([]int, len(ids)+1)
	for _, o := range owner {
		if o >= 0 {
			start[o+1]++
		}
	}
	for m := range ids {
		start[m+1] += start[m]
	}
	grouped := make([]int32, start[len(ids)])
	next := slices.Clone(start[:len(ids)])
	for i, o := range owner {
		if o >= 0 {
			grouped[next[o]] = int32(i)
			next[o]++
		}
	}
	type scored struct {
		i     int32
		rank  int
		score uint64
	}
	var byScore []scored
	for m := range ids {
		list := grouped[start[m]:start[m+1]]
		if len(list) > caps[m] {
			byScore = byScore[:0]
			for _, i := range list {
				byScore = append(byScore, scored{i, rank(int(i)), sc.score(shards[i], ids[m])})
			}
			slices.SortFunc(byScore, func(a, b scored) int {
				if c := cmp.Compare(a.rank, b.rank); c != 0 {
					return c
				}
				if c := cmp.Compare(b.score, a.score); c != 0 {
					return c
				}
				return cmp.Compare(a.i, b.i) // a 64-bit tie: lower shard first
			})
			list = list[:caps[m]]
			for k := range list {
				list[k] = byScore[k].i
			}
		}
		for _, i := range list {
			target[i] = int32(m)
		}
		room[m] -= len(list)
	}
	return target, room
}
