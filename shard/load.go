package shard

// ShardLoads is each held shard's load as its holder last reported it
// (Member.Load, from its loads key): only a live holder's figure for a shard it
// holds counts. A shard with no such figure is missing.
func (s Snapshot) ShardLoads() map[ID]float64 {
	live := make(map[SessionID]int, len(s.Members))
	for i, m := range s.Members {
		if m.Live() {
			live[m.Session] = i
		}
	}
	out := map[ID]float64{}
	for _, st := range s.Shards {
		i, ok := live[st.Session]
		if !ok || !st.Held() {
			continue
		}
		if v, ok := s.Members[i].Load[st.Shard]; ok && v >= 0 {
			out[st.Shard] = v
		}
	}
	return out
}

// MemberLoad is one live member's load as a snapshot shows it.
type MemberLoad struct {
	Member string
	// Load is the sum of the loads of the shards it holds; a shard without
	// a figure counts as the mean of those with one.
	Load float64
	// Capacity is its member weight; a draining member has none.
	Capacity int
	// Shards is how many shards it holds, Measured how many have a figure.
	Shards, Measured int
}

// MemberLoads sums loads (by shard, e.g. ShardLoads) per live member of
// s, in member order. A held shard missing from loads counts as the mean
// of the held shards in it, so that a fleet where nothing is measured
// shows each member's shard count as its load.
func (s Snapshot) MemberLoads(loads map[ID]float64) []MemberLoad {
	mean, n := 0.0, 0
	for _, st := range s.Shards {
		if v, ok := loads[st.Shard]; ok && st.Held() {
			mean += v
			n++
		}
	}
	if n > 0 {
		mean /= float64(n)
	} else {
		mean = 1
	}
	index := map[SessionID]int{}
	var out []MemberLoad
	for _, m := range s.Members {
		if !m.Live() {
			continue
		}
		index[m.Session] = len(out)
		c := m.Weight
		if m.Draining {
			c = 0
		}
		out = append(out, MemberLoad{Member: m.ID, Capacity: c})
	}
	for _, st := range s.Shards {
		i, ok := index[st.Session]
		if !ok || !st.Held() {
			continue
		}
		ml := &out[i]
		ml.Shards++
		if v, ok := loads[st.Shard]; ok {
			ml.Load += v
			ml.Measured++
		} else {
			ml.Load += mean
		}
	}
	return out
}

// LoadMean is the fleet's load per unit of capacity: the loads of the
// members with capacity over their capacity. ok is false without any.
func LoadMean(members []MemberLoad) (mean float64, ok bool) {
	load, capacity := 0.0, 0
	for _, m := range members {
		if m.Capacity > 0 {
			load += m.Load
			capacity += m.Capacity
		}
	}
	if capacity == 0 || load == 0 {
		return 0, false
	}
	return load / float64(capacity), true
}

// LoadSpread is the lowest and highest load per unit of capacity among
// the live members of s with capacity, each divided by the fleet's mean
// (LoadMean): 1 and 1 for a fleet in perfect balance. ok is false when
// no member has capacity or nothing has load.
func LoadSpread(s Snapshot, loads map[ID]float64) (lo, hi float64, ok bool) {
	members := s.MemberLoads(loads)
	mean, ok := LoadMean(members)
	if !ok {
		return 0, 0, false
	}
	first := true
	for _, m := range members {
		if m.Capacity <= 0 {
			continue
		}
		r := m.Load / float64(m.Capacity) / mean
		if first {
			lo, hi, first = r, r, false
		}
		lo, hi = min(lo, r), max(hi, r)
	}
	return lo, hi, true
}
