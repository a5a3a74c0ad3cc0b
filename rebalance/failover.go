package rebalance

import "github.com/cespare/xxhash/v2"

// MaxStandbysPerMember bounds the standbys for failover a member is given
// (Policy.Standbys is lowered until they fit): a worker reports its
// standbys in one key, about 20 bytes each when scattered, within
// shard.MaxLoadBytes with room left for the preparations of a warm join.
const MaxStandbysPerMember = 8192

// failover picks, for each shard with an owner after this step (see
// owner below), up to
// Policy.Standbys standbys among the other members that may run one
// (mayStandby), and returns them as each member's list of shards. A
// member already listing the shard keeps it while it may and holds at
// most one more standby than the cap, ⌈owned·K ÷ members⌉, and a new one
// is picked from a place on the members that follows the shard's hash,
// with fewer than the cap; in both, members outside the owner's zone come
// first. So the standbys spread evenly, across zones where there are
// zones, and stay where they are warm while the fleet is stable: a
// written decision, read back, picks the same.
func (st *step) failover() [][]int32 {
	w := len(st.members)
	lists := make([][]int32, w)
	k := st.p.Standbys
	if k <= 0 {
		return lists
	}
	var eligible []int32
	for m := range int32(w) {
		if st.members[m].Standby && !st.stuck[m] && !st.cordoned[m] && !st.draining[m] {
			eligible = append(eligible, m)
		}
	}
	if len(eligible) < 2 {
		return lists
	}
	k = min(k, len(eligible)-1)
	// A shard's owner is its key's member after this step; for a
	// hand-off in flight, the member a warm move takes it to, or else its
	// holder (its target may change before it is placed).
	owner := func(i int) int32 {
		if o := st.next[i]; o >= 0 {
			return o
		}
		if w := st.warmDest(i); w >= 0 && st.holder[i] >= 0 {
			return w
		}
		return st.holder[i]
	}
	owned := 0
	for i := range st.shards {
		if owner(i) >= 0 {
			owned++
		}
	}
	// Each worker reports its standbys in one key (MaxStandbysPerMember):
	// K is what fits.
	k = min(k, MaxStandbysPerMember*len(eligible)/max(owned, 1))
	if k <= 0 {
		return lists
	}
	capacity := (owned*k + len(eligible) - 1) / len(eligible)
	counts := make([]int, w)
	// roomIn counts, per zone, the eligible members below the capacity,
	// so that a pass that cannot find one is not scanned: without it a
	// fleet in one zone scans every member for every shard.
	roomIn := map[string]int{}
	for _, m := range eligible {
		roomIn[st.members[m].Zone]++
	}
	room := len(eligible)
	chosen := make([]int32, 0, k)
	for i := range st.shards {
		o := owner(i)
		if o < 0 {
			continue
		}
		chosen = chosen[:0]
		warm := st.warmDest(i) // its listing there is the warm move's, not a standby for failover
		take := func(m int32, limit int, otherZone bool) {
			if len(chosen) == k || m == o || m == warm || counts[m] >= limit || (otherZone && st.members[m].Zone == st.members[o].Zone) ||
				!st.mayStandby(i, m) || containsMember(chosen, m) {
				return
			}
			chosen = append(chosen, m)
			if counts[m]++; counts[m] == capacity {
				roomIn[st.members[m].Zone]--
				room--
			}
		}
		var listed []int32
		if st.listers != nil {
			listed = st.listers(i)
		}
		for _, otherZone := range []bool{true, false} {
			for _, m := range listed {
				take(m, capacity+1, otherZone)
			}
		}
		start := int(xxhash.Sum64String(string(st.shards[i])) % uint64(len(eligible)))
		for _, pass := range []struct {
			limit     int
			otherZone bool
		}{{capacity, true}, {capacity, false}, {1 << 30, false}} {
			switch {
			case len(chosen) == k:
			case pass.limit == capacity && pass.otherZone && room-roomIn[st.members[o].Zone] <= 0:
				continue // nobody outside the owner's zone has room
			case pass.limit == capacity && room <= 0:
				continue // nobody has room
			}
			for j := range eligible {
				if len(chosen) == k {
					break
				}
				take(eligible[(start+j)%len(eligible)], pass.limit, pass.otherZone)
			}
		}
		for _, m := range chosen {
			lists[m] = append(lists[m], int32(i))
		}
	}
	return lists
}

func containsMember(ms []int32, m int32) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// warmDest is the member a warm move of shard i goes to, whose key lists
// the shard for that move after this step: prepared or handed off in this
// step, or in flight or placed there from an earlier one; -1 when none (a
// preparation the move budget or a freeze stopped has ended).
func (st *step) warmDest(i int) int32 {
	if st.flags[i]&preparing != 0 {
		return st.movesTo(i)
	}
	if st.flags[i]&handedOff != 0 {
		for _, mv := range st.warmNow {
			if mv.i == int32(i) {
				return mv.to
			}
		}
	}
	if st.prepTo == nil {
		return -1
	}
	if t := st.prepTo[i]; t >= 0 && (st.flags[i]&handedOff != 0 || st.warmInFlight(i) || st.next[i] == t) {
		return t
	}
	return -1
}
