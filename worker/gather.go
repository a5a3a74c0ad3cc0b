package worker

import (
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
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
	limit   time.Duration // ColdStartGather; < 0: never gather
	done    bool          // the fleet was seen warm, or the wait ended
	began   time.Time     // when this assignor first saw the fleet cold
	changed time.Time     // when the live member set last changed
	members []string      // the live member IDs last seen, sorted
}

// wait reports when the assignor may place a cold fleet's shards: the zero
// time when it may now, or the time to look again.
func (g *gathering) wait(snap shard.Snapshot, now time.Time) time.Time {
	if g.done || g.limit < 0 {
		return time.Time{}
	}
	live := liveMembers(snap)
	if !cold(snap, live) {
		g.done = true
		return time.Time{}
	}
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if g.began.IsZero() {
		g.began, g.changed = now, now
	} else if !slices.Equal(ids, g.members) {
		g.changed = now
	}
	g.members = ids
	until := g.changed.Add(min(gatherQuiet, g.limit))
	if last := g.began.Add(g.limit); last.Before(until) {
		until = last
	}
	if !now.Before(until) {
		g.done = true
		return time.Time{}
	}
	return until
}

// liveMembers maps each live member's session to its ID.
func liveMembers(snap shard.Snapshot) map[string]shard.SessionID {
	live := make(map[string]shard.SessionID, len(snap.Members))
	for _, m := range snap.Members {
		if m.Live() {
			live[m.ID] = m.Session
		}
	}
	return live
}

// cold reports whether no shard is held by a live member's session and no
// live member's key lists a shard.
func cold(snap shard.Snapshot, live map[string]shard.SessionID) bool {
	sessions := make(map[shard.SessionID]bool, len(live))
	for id, s := range live {
		sessions[s] = true
		if len(snap.Assignments[id].Shards) > 0 {
			return false
		}
	}
	for _, s := range snap.Shards {
		if s.Held() && sessions[s.Session] {
			return false
		}
	}
	return true
}
