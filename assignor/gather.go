package assignor

import (
	"slices"
	"time"

	"github.com/shardlease/shardlease/rebalance"
)

// gatherQuiet is how long no member may join or leave before the assignor
// of a cold fleet places its shards. Workers started together register
// within a few tens of milliseconds of each other; a pause this long means
// the burst is over.
const gatherQuiet = 300 * time.Millisecond

// gathering paces the first placement of a cold fleet: no shard is held by
// a live member and no live member's key lists a shard (a fleet starting,
// or starting again after every worker was gone). Placing at once would
// put every shard on the few members registered so far, and each worker
// that registers a moment later would then take its share from them by
// hand-offs, racing the first assignees still acquiring the same shards
// (figures in docs/design.md, "Pacing"). So the
// assignor waits until no member has joined or left for gatherQuiet, or
// until ColdStartGather has passed since it first saw the fleet cold,
// whichever comes first (Kafka's group.initial.rebalance.delay.ms is the
// same idea). A fleet that holds anything is never delayed: failover and
// joins to a running fleet are placed at once.
//
// It is pacing only, kept by the assignor in memory: a new assignor
// gathers afresh, which delays nothing but a cold fleet's first placement.
type gathering struct {
	done    bool      // the fleet was seen warm, or the wait ended
	began   time.Time // when this assignor first saw the fleet cold
	changed time.Time // when the live member set last changed
	members []string  // the live member IDs last seen, sorted
}

// wait reports when the assignor may place a cold fleet's shards, from the
// state it is about to step on and the policy's limit (< 0: never
// gather): the zero time when it may now, or the time to look again.
// Before the quiet ends the gathering, fresh (when not nil) lists the live
// members as of a read as new as the call, made to end by deadline (the
// gathering's limit, so that the read never holds the placement past
// it): a listing that stopped changing may only be late (a watch behind a
// busy coordinator), and at 1,000 workers one that paused for 300 ms
// ended the gathering with 244 members while 1,000 had joined, leaving
// 756 to take their shares by hand-offs for minutes. A member set that changed restarts the quiet; a failed read
// does not hold the placement back.
func (g *gathering) wait(s rebalance.State, limit time.Duration, fresh func(deadline time.Time) ([]string, error)) time.Time {
	if g.done || limit < 0 {
		return time.Time{}
	}
	if !cold(s) {
		g.done = true
		return time.Time{}
	}
	ids := memberIDs(s)
	if g.began.IsZero() {
		g.began, g.changed = s.Now, s.Now
	} else if !slices.Equal(ids, g.members) {
		g.changed = s.Now
	}
	g.members = ids
	until := g.changed.Add(min(gatherQuiet, limit))
	if last := g.began.Add(limit); last.Before(until) {
		until = last
	}
	if !s.Now.Before(until) {
		if beforeLimit := s.Now.Before(g.began.Add(limit)); beforeLimit && fresh != nil {
			if ids, err := fresh(g.began.Add(limit)); err == nil && !slices.Equal(ids, g.members) {
				g.changed, g.members = s.Now, ids
				return minTime(s.Now.Add(min(gatherQuiet, limit)), g.began.Add(limit))
			}
		}
		g.done = true
		return time.Time{}
	}
	return until
}

// memberIDs are the IDs of s's members, sorted.
func memberIDs(s rebalance.State) []string {
	ids := make([]string, len(s.Members))
	for i, m := range s.Members {
		ids[i] = m.ID
	}
	slices.Sort(ids)
	return ids
}

// minTime is the earlier of two times.
func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// cold reports whether no live member holds a shard (State.Holders names
// live holders only) and no live member's key lists one.
func cold(s rebalance.State) bool {
	if slices.ContainsFunc(s.Holders, func(h string) bool { return h != "" }) {
		return false
	}
	for _, m := range s.Members {
		if len(s.Assigned[m.ID].Shards) > 0 {
			return false
		}
	}
	return true
}
