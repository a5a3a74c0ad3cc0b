package rebalance

import (
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// reserve takes the workers of s.Returning still inside their grace out of
// s, with their keys and the shards those keep for them, so that the step
// that follows neither gives those shards away nor writes or deletes the
// keys. It returns the state the step is to plan from, the earliest end
// of a grace still running (zero when none is), when the step must run
// again to give the shards of a worker that did not come back to others,
// and the shards kept (nil when none is).
//
// A shard of a returning worker's key that another live member holds is
// not kept (the key is a stale claim on it; the holder's counts). While the
// returning worker is live (it is stopping) the shards it holds are kept
// too, key or not: it is releasing them, and nobody may be told to take a
// lock that is still held. s is not modified; without a returning worker it
// is returned as it is.
func reserve(s State) (State, time.Time, map[shard.ID]bool) {
	var back map[string]bool
	var until time.Time
	for w, t := range s.Returning {
		if !s.Now.Before(t) {
			continue
		}
		if back == nil {
			back = map[string]bool{}
		}
		back[w] = true
		if until.IsZero() || t.Before(until) {
			until = t
		}
	}
	if back == nil {
		return s, time.Time{}, nil
	}
	if len(s.Holders) != 0 && len(s.Holders) != len(s.Shards) {
		return s, time.Time{}, nil // invalid: readState says why
	}
	live := make(map[string]bool, len(s.Members))
	for _, m := range s.Members {
		live[m.ID] = true
	}
	held := make(map[shard.ID]string, len(s.Holders))
	for j, h := range s.Holders {
		if h != "" {
			held[s.Shards[j]] = h
		}
	}
	kept := map[shard.ID]bool{}
	for id, h := range held {
		if back[h] && live[h] {
			kept[id] = true
		}
	}
	for w, a := range s.Assigned {
		if !back[w] {
			continue
		}
		for _, id := range a.Shards {
			if h, ok := held[id]; !ok || h == w || !live[h] || back[h] {
				kept[id] = true
			}
		}
	}

	out := s
	out.Returning = nil
	out.Members = slices.DeleteFunc(slices.Clone(s.Members), func(m Member) bool { return back[m.ID] })
	out.Shards = make([]shard.ID, 0, len(s.Shards))
	out.Holders = nil
	for j, id := range s.Shards {
		if kept[id] {
			continue
		}
		out.Shards = append(out.Shards, id)
		if len(s.Holders) != 0 {
			out.Holders = append(out.Holders, s.Holders[j])
		}
	}
	out.Assigned = make(map[string]Assignment, len(s.Assigned))
	for w, a := range s.Assigned {
		if back[w] {
			continue
		}
		if slices.ContainsFunc(a.Shards, func(id shard.ID) bool { return kept[id] }) {
			a.Shards = slices.DeleteFunc(slices.Clone(a.Shards), func(id shard.ID) bool { return kept[id] })
			a.Free = slices.DeleteFunc(slices.Clone(a.Free), func(id shard.ID) bool { return kept[id] })
		}
		out.Assigned[w] = a
	}
	return out, until, kept
}

// carryStandbys puts back, into each key d writes, the standbys of kept
// shards (those reserve kept for a returning worker) that the key as read
// in s listed, with their starts: the step planned without those shards,
// and the standbys of a returning worker's shards must stay warm for the
// case it does not come back.
func carryStandbys(s State, kept map[shard.ID]bool, d *Decision) {
	for w, a := range d.Assign {
		old := s.Assigned[w]
		var extra []shard.ID
		for _, id := range old.Standby {
			if kept[id] && !slices.Contains(a.Standby, id) {
				extra = append(extra, id)
			}
		}
		if len(extra) == 0 {
			continue
		}
		a.Standby = slices.Sorted(slices.Values(append(slices.Clone(a.Standby), extra...)))
		for _, id := range extra {
			if at, ok := old.Preparing[id]; ok {
				if a.Preparing == nil {
					a.Preparing = map[shard.ID]time.Time{}
				}
				a.Preparing[id] = at
			}
		}
		d.Assign[w] = a
	}
}
