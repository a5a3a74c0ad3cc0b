package rebalance

import (
	"cmp"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// assign returns the target member index of each shard.
//
// shards and ids are sorted; owner[i] is the index of shard i's live holder
// or -1 when it is free; caps are the quotas (they sum to len(shards)).
//
// First every member keeps what it holds, up to its quota (see keep). Then
// each free shard, in shard order, goes to the highest-scoring member that
// still has room. Without the capacity bound this is plain rendezvous
// hashing; with it, placement stays O(F·W) and deterministic, and a shard
// only deviates from its first choice when that member is full.
func assign(shards []shard.ID, ids []string, owner []int, caps []int) []int {
	var sc scorer
	target, room := keep(shards, ids, owner, nil, caps)

	// Members with room, in ID order; as they fill up they drop out, so in
	// the common cases (one joiner, a few leavers' shards) the loop is short.
	open := make([]int, 0, len(ids))
	for m, r := range room {
		if r > 0 {
			open = append(open, m)
		}
	}
	for i, s := range shards {
		if target[i] >= 0 {
			continue
		}
		// Σroom equals the number of free shards, so open is not empty.
		sc.setShard(s)
		best, bestScore := 0, sc.member(ids[open[0]])
		for k := 1; k < len(open); k++ {
			if v := sc.member(ids[open[k]]); v > bestScore {
				best, bestScore = k, v // strict: a tie keeps the lower ID
			}
		}
		m := open[best]
		target[i] = m
		if room[m]--; room[m] == 0 {
			open = slices.Delete(open, best, best+1)
		}
	}
	return target
}

// keep returns, for every shard, the member that keeps it (-1 for the shards
// nobody keeps) and each member's room left under its quota.
//
// owner[i] is the member shard i counts for, or -1; caps are the quotas.
// Every member keeps min(count, quota) of its shards, preferring its
// highest-scoring ones: keeping is what makes a plan sticky, and choosing by
// score rather than by shard order spreads what is shed evenly over the
// shard space and keeps the shards the member would also win by rendezvous.
// firm, when not nil, tells the shards a member actually holds (Step also
// counts shards only assigned to it): those are kept first, whatever the
// scores, because shedding an assigned free shard costs nothing while
// shedding a held one costs a hand-off.
func keep[I int | int32](shards []shard.ID, ids []string, owner []I, firm func(i int) bool, caps []int) (target []I, room []int) {
	var sc scorer
	room = slices.Clone(caps)
	for _, o := range owner {
		if o >= 0 {
			room[o]--
		}
	}
	if !slices.ContainsFunc(room, func(r int) bool { return r < 0 }) {
		// Nobody is over its quota (the steady state): everyone keeps all.
		return slices.Clone(owner), room
	}
	target = make([]I, len(shards))
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
	grouped := make([]I, start[len(ids)])
	next := slices.Clone(start[:len(ids)])
	for i, o := range owner {
		if o >= 0 {
			grouped[next[o]] = I(i)
			next[o]++
		}
	}
	type scored struct {
		i     I
		firm  bool
		score uint64
	}
	var byScore []scored
	for m := range ids {
		list := grouped[start[m]:start[m+1]]
		if len(list) > caps[m] {
			byScore = byScore[:0]
			for _, i := range list {
				byScore = append(byScore, scored{i, firm == nil || firm(int(i)), sc.score(shards[i], ids[m])})
			}
			slices.SortFunc(byScore, func(a, b scored) int {
				if a.firm != b.firm {
					if a.firm {
						return -1
					}
					return 1
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
			target[i] = I(m)
		}
		room[m] -= len(list)
	}
	return target, room
}
