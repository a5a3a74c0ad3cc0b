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
