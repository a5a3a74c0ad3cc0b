package fleetview

import (
	"fmt"

	"github.com/shardlease/shardlease/shard"
)

// The operators' event kinds. Cordoned and Uncordoned are worker events;
// Frozen and Unfrozen are the fleet's, and their Worker is empty.
const (
	Cordoned   = "cordoned"
	Uncordoned = "uncordoned"
	Frozen     = "frozen"
	Unfrozen   = "unfrozen"
)

// cordonChange is the event for a live worker's cordon set or lifted
// under one session (a worker that rejoins carries its cordon over: its
// Joined event says enough).
func cordonChange(id string, o, n shard.MemberState) (Event, bool) {
	if o.Session != n.Session || (o.Cordon == nil) == (n.Cordon == nil) {
		return Event{}, false
	}
	if n.Cordon != nil {
		return Event{Kind: Cordoned, Worker: id, Reason: "given nothing new, keeps what it has: " + markReason(n.Cordon)}, true
	}
	return Event{Kind: Uncordoned, Worker: id, Reason: "cordon lifted: it is given a share again"}, true
}

// freezeChange is the event for the fleet's freeze set or lifted.
func freezeChange(prev, next *shard.Mark) (Event, bool) {
	switch {
	case prev == nil && next != nil:
		return Event{Kind: Frozen, Reason: "no rebalancing moves, only failover: " + markReason(next)}, true
	case prev != nil && next == nil:
		return Event{Kind: Unfrozen, Reason: "rebalancing resumes within the move budget"}, true
	}
	return Event{}, false
}

// markReason says who set a mark and why: "by alice: bad disk".
func markReason(m *shard.Mark) string {
	s := "by " + orDefault(m.By, "(unknown)")
	if m.Reason != "" {
		s = fmt.Sprintf("%s: %s", s, m.Reason)
	}
	return s
}
