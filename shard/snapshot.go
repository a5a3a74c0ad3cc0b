package shard

import (
	"cmp"
	"slices"
)

// Shard returns the state of shard id if its key exists. Snapshots keep
// Shards sorted by ID, so this is a binary search.
func (s Snapshot) Shard(id ID) (ShardState, bool) {
	i, ok := slices.BinarySearchFunc(s.Shards, id, func(st ShardState, id ID) int { return cmp.Compare(st.Shard, id) })
	if !ok {
		return ShardState{}, false
	}
	return s.Shards[i], true
}

// Member returns member id if its key exists (live or dead).
func (s Snapshot) Member(id string) (MemberState, bool) {
	i, ok := slices.BinarySearchFunc(s.Members, id, func(m MemberState, id string) int { return cmp.Compare(m.ID, id) })
	if !ok {
		return MemberState{}, false
	}
	return s.Members[i], true
}

// Owners maps each shard held by a live member's session to that member's
// ID. A shard held by a session with no live member key is left out.
func (s Snapshot) Owners() map[ID]string {
	bySession := make(map[SessionID]string, len(s.Members))
	for _, m := range s.Members {
		if m.Live() {
			bySession[m.Session] = m.ID
		}
	}
	owners := make(map[ID]string, len(s.Shards))
	for _, st := range s.Shards {
		if id, ok := bySession[st.Session]; ok && st.Held() {
			owners[st.Shard] = id
		}
	}
	return owners
}

// Counts returns how many shards each live member owns, with zeros for
// live members that own none.
func (s Snapshot) Counts() map[string]int {
	counts := map[string]int{}
	for _, m := range s.Members {
		if m.Live() {
			counts[m.ID] = 0
		}
	}
	for _, id := range s.Owners() {
		counts[id]++
	}
	return counts
}
