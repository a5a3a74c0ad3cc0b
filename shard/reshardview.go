package shard

import "slices"

// ReshardProgress is a reshard in progress as one snapshot shows it.
type ReshardProgress struct {
	// Layout is the reshard's (Config.Reshard).
	Layout Layout `json:"layout"`
	// Parents still open (to be closed by their owners), and those
	// closed: released as closed (ReasonClosed) and not held since, or
	// with a child already open. Closing are the open parents the
	// assignor asks their holders to close now (Assignment.Close): the
	// current wave.
	Open    []ID `json:"open"`
	Closed  []ID `json:"closed"`
	Closing []ID `json:"closing"`
	// Children opened (they may be acquired), those whose parents are
	// all closed but which are not opened yet (the assignor's next
	// write), and those waiting for a parent.
	Opened   []ID `json:"opened"`
	Openable []ID `json:"openable"`
	Waiting  []ID `json:"waiting"`
}

// Reshard returns the progress of the reshard in progress in s, and false
// when s's config runs none. Parents and children are in ID order. Its
// cost is one pass over the children and their parents.
func (s Snapshot) Reshard() (ReshardProgress, bool) {
	if s.Config == nil {
		return ReshardProgress{}, false
	}
	cfg := *s.Config
	l, ok := cfg.running()
	if !ok {
		return ReshardProgress{}, false
	}
	segs := cfg.Segments()
	parents, children := segs[0], segs[1]
	p := ReshardProgress{Layout: l}
	p.Layout.Parents, p.Layout.Opened = slices.Clone(l.Parents), slices.Clone(l.Opened)
	open := make([]bool, children.Shards) // opened children
	for _, r := range l.Opened {
		for i := max(r[0], 0); i <= r[1] && i < children.Shards; i++ {
			open[i] = true
		}
	}
	lineage := make([][]int, children.Shards) // each child's parents
	closed := make([]bool, parents.Shards)
	for c := range children.Shards {
		lineage[c] = parentsIn(l, parents.Shards, c)
		if open[c] {
			for _, q := range lineage[c] {
				closed[q] = true // a parent with a child open is closed for good
			}
		}
	}
	for i := range parents.Shards {
		id := parents.ID(i)
		if !closed[i] {
			st, _ := s.Shard(id)
			closed[i] = !st.Held() && st.Token != 0 && st.Owner.Released == ReasonClosed
		}
		if closed[i] {
			p.Closed = append(p.Closed, id)
		} else {
			p.Open = append(p.Open, id)
		}
	}
	asked := map[ID]bool{}
	for _, a := range s.Assignments {
		for _, id := range a.Close {
			asked[id] = true
		}
	}
	for _, id := range p.Open {
		if asked[id] {
			p.Closing = append(p.Closing, id)
		}
	}
	for c := range children.Shards {
		id := children.ID(c)
		switch {
		case open[c]:
			p.Opened = append(p.Opened, id)
		case !slices.ContainsFunc(lineage[c], func(q int) bool { return q >= len(closed) || !closed[q] }):
			p.Openable = append(p.Openable, id)
		default:
			p.Waiting = append(p.Waiting, id)
		}
	}
	return p, true
}

// Opening is cfg's layouts with the children ids of the reshard in
// progress opened: what the assignor writes (Fleet.SetLayouts) when it
// saw their parents closed. ids must be children of it. With every child
// open the ranges are whole; the reshard is done (Done) only once every
// child is also held (Ending).
func (cfg Config) Opening(ids []ID) []Layout {
	n := len(cfg.Layouts)
	out := slices.Clone(cfg.Layouts)
	if n == 0 || !cfg.Resharding() {
		return out
	}
	l := out[n-1]
	seg := cfg.Segments()[1]
	open := make([]bool, l.Shards)
	for _, r := range l.Opened {
		for i := r[0]; i <= r[1]; i++ {
			open[i] = true
		}
	}
	for _, id := range ids {
		if i, ok := seg.Index(id); ok {
			open[i] = true
		}
	}
	l.Opened = nil
	for i := 0; i < len(open); i++ {
		if !open[i] {
			continue
		}
		j := i
		for j+1 < len(open) && open[j+1] {
			j++
		}
		l.Opened = append(l.Opened, [2]int{i, j})
		i = j
	}
	out[n-1] = l
	return out
}

// Ending is cfg's layouts with the reshard in progress done: every child
// open, its parents retired. The assignor writes it once every child is
// open and held by a live worker, so that until then nothing is handed
// off (a child already running keeps its owner while the last ones are
// placed).
func (cfg Config) Ending() []Layout {
	out := slices.Clone(cfg.Layouts)
	if n := len(out); n > 0 && cfg.Resharding() {
		out[n-1].Opened, out[n-1].Done = nil, true
	}
	return out
}
