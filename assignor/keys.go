package assignor

import (
	"fmt"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// Keys turns a decision of rebalance.Step on snap into the keys to write:
// for each worker whose assignment changes, its key — its shards, the
// free ones as of snap's index and why each was given to it, and why each
// shard it holds and no longer has is taken from it — with the assignor's
// memory about it beside; nil for each key to delete.
//
// The reasons are the step's own (Transfer.Reason). A free shard the step
// placed for no reason of its own (shard.ReasonFree: nobody's key lists
// it) is explained by its lock: never owned (shard.ReasonInitial),
// released by its last owner for the reason that owner recorded (a
// hand-off's second step, so a move keeps one reason from decision to
// arrival), or orphaned by a session that ended. Reasons already in a
// worker's key for shards still in flight are kept. Every key asks its
// worker for its loads when wantLoads is set (the fleet balances load).
func Keys(snap shard.Snapshot, cfg shard.Config, d rebalance.Decision, wantLoads bool) (map[string]*shard.Assignment, error) {
	cfg.Generation = generation(snap)
	placed := map[shard.ID]shard.Why{}               // why each shard placed by this step was given
	handedOff := map[string]map[shard.ID]shard.Why{} // by worker: hand-offs this step started
	for _, mv := range d.Moves {
		if mv.From == "" {
			placed[mv.Shard] = placement(snap, mv)
			continue
		}
		if handedOff[mv.From] == nil {
			handedOff[mv.From] = map[shard.ID]shard.Why{}
		}
		handedOff[mv.From][mv.Shard] = shard.Why{Reason: mv.Reason}
	}
	held := heldBy(snap)
	set := make(map[string]*shard.Assignment, len(d.Assign)+len(d.Delete))
	for w, a := range d.Assign {
		memory, err := encodeMemory(cfg, a)
		if err != nil {
			return nil, fmt.Errorf("worker %s's memory: %w", w, err)
		}
		prev := snap.Assignments[w]
		k := &shard.Assignment{Shards: a.Shards, Free: a.Free, AsOf: snap.Index, Loads: wantLoads, Standby: a.Standby, Memory: memory}
		for _, id := range a.Free {
			why, ok := placed[id]
			if !ok {
				why, ok = prev.Why[id]
			}
			if !ok {
				why = placement(snap, rebalance.Transfer{Shard: id, Reason: shard.ReasonFree})
			}
			k.Why = with(k.Why, id, why)
		}
		listed := make(map[shard.ID]bool, len(a.Shards))
		for _, id := range a.Shards {
			listed[id] = true
		}
		for _, id := range held[w] {
			if listed[id] {
				continue
			}
			why, ok := handedOff[w][id]
			if !ok {
				why, ok = prev.Release[id]
			}
			if !ok {
				why = shard.Why{Reason: shard.ReasonRebalance}
			}
			k.Release = with(k.Release, id, why)
		}
		set[w] = k
	}
	for _, w := range d.Delete {
		set[w] = nil
	}
	return set, nil
}

// askLoads adds to d the key of every live worker whose key asks for its
// loads otherwise than wantLoads says (the policy turned load balancing on or
// off): one rewrite of each such key (rewriteKeys).
func askLoads(snap shard.Snapshot, st rebalance.State, d rebalance.Decision, wantLoads bool) rebalance.Decision {
	return rewriteKeys(snap, st, d, func(_ string, k shard.Assignment, _ rebalance.Assignment) bool { return k.Loads != wantLoads })
}

// rewriteKeys adds to d, once, the key of every live worker that the step
// leaves as it is (d does not write it) but stale says must be written
// again (k: its key as listed; a: as the step read it): its shards and
// the assignor's memory as they are, its free shards as of this listing
// (those of its shards no live member holds), so that a worker running a
// shard it took after the key was last written is not told it lost it.
func rewriteKeys(snap shard.Snapshot, st rebalance.State, d rebalance.Decision, stale func(id string, k shard.Assignment, a rebalance.Assignment) bool) rebalance.Decision {
	var held map[shard.ID]bool
	for _, m := range st.Members {
		k, keyed := snap.Assignments[m.ID]
		if _, written := d.Assign[m.ID]; !keyed || written || !stale(m.ID, k, st.Assigned[m.ID]) {
			continue
		}
		if held == nil {
			held = heldShards(st)
		}
		a := st.Assigned[m.ID]
		a.Free = nil
		for _, id := range a.Shards {
			if !held[id] {
				a.Free = append(a.Free, id)
			}
		}
		if d.Assign == nil {
			d.Assign = map[string]rebalance.Assignment{}
		}
		d.Assign[m.ID] = a
	}
	return d
}

// heldShards is the set of shards a live member holds in st.
func heldShards(st rebalance.State) map[shard.ID]bool {
	held := make(map[shard.ID]bool, len(st.Holders))
	for i, h := range st.Holders {
		if h != "" {
			held[st.Shards[i]] = true
		}
	}
	return held
}

// placement is why a free shard the step placed was given. A lock whose
// last owner released it says what happened, and who: released for the
// reason recorded (a hand-off's, or a stopping worker's shutdown, which the
// step would call a drain when the stopping worker's key still lists the
// shard). Otherwise the step's reason, or, for a shard it found free or
// orphaned, what its lock says: never owned, or orphaned by the owner whose
// session ended holding it.
func placement(snap shard.Snapshot, mv rebalance.Transfer) shard.Why {
	st, exists := snap.Shard(mv.Shard)
	switch {
	case exists && st.Token != 0 && !st.Held() && st.Owner.Released != shard.ReasonUnknown:
		return shard.Why{Reason: st.Owner.Released, From: st.Owner.Worker}
	case mv.Reason != shard.ReasonFree && mv.Reason != shard.ReasonOrphaned:
		return shard.Why{Reason: mv.Reason}
	case !exists || st.Token == 0:
		return shard.Why{Reason: shard.ReasonInitial}
	}
	return shard.Why{Reason: shard.ReasonOrphaned, From: st.Owner.Worker}
}

// heldBy lists, per live member, the shards its current session holds,
// in the snapshot's order (by shard ID). Straight from the shard list: at
// 100,000 shards a map by shard first (Snapshot.Owners) costs more than
// the rest of a steady step, and this runs twice per step.
func heldBy(snap shard.Snapshot) map[string][]shard.ID {
	bySession := make(map[shard.SessionID]string, len(snap.Members))
	for _, m := range snap.Members {
		if m.Live() {
			bySession[m.Session] = m.ID
		}
	}
	out := make(map[string][]shard.ID, len(bySession))
	for _, st := range snap.Shards {
		if w, ok := bySession[st.Session]; ok && st.Held() {
			out[w] = append(out[w], st.Shard)
		}
	}
	return out
}

func with(m map[shard.ID]shard.Why, id shard.ID, why shard.Why) map[shard.ID]shard.Why {
	if m == nil {
		m = map[shard.ID]shard.Why{}
	}
	m[id] = why
	return m
}
