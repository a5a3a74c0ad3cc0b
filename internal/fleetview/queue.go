package fleetview

import (
	"slices"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// Queue is the fleet's move queue as a listing shows it: the hand-offs in
// flight against the assignor's budget, and those the balance still wants
// that have not started (they wait for room under the budget, or for the
// freeze to be lifted).
type Queue struct {
	// InFlight are the hand-offs in flight (Summary.HandOffs): shards held
	// by a live worker whose assignment key no longer lists them. They are
	// what counts against the budget.
	InFlight int `json:"in_flight"`
	// Budget is the assignor's MaxMovesInFlight when the viewer knows it
	// (Input.MaxMovesInFlight); 0: unknown.
	Budget int `json:"budget,omitempty"`
	// Queued estimates the hand-offs not started: shards a live worker
	// holds and still has in its key that the balance (rebalance.Compute
	// over the workers free to take shards, cordoned ones keeping what they
	// hold) puts elsewhere. It is an estimate for display, not the
	// assignor's decision: a worker judged stuck is not taken into account.
	Queued int `json:"queued"`
	// ByLoad: the assignor last balanced load (a live worker's key says
	// so). Its waiting moves are then its own to plan, in waves, from loads
	// this estimate does not weigh, so Queued is 0 and not an estimate.
	ByLoad bool `json:"by_load,omitempty"`
}

// balancingLoad reports whether a live worker's assignment key was last
// written by an assignor that balanced load.
func balancingLoad(f Fleet, s shard.Snapshot) bool {
	for _, w := range f.Workers {
		if w.Live() && s.Assignments[w.ID].ByLoad {
			return true
		}
	}
	return false
}

// queued estimates the hand-offs the balance wants that have not started,
// from the fleet f as built so far. Shards of a returning worker and the
// shards a cordoned worker holds are left out, as the assignor leaves them
// where they are.
func queued(f Fleet, s shard.Snapshot) int {
	var members []rebalance.Member
	kept := map[string]bool{} // cordoned, keeping what they hold
	takers := 0
	for _, w := range f.Workers {
		if !w.Live() || w.Returning {
			continue
		}
		if w.Cordon != nil && !w.Draining {
			kept[w.ID] = true
			continue
		}
		members = append(members, rebalance.Member{ID: w.ID, Weight: w.Weight, Draining: w.Draining})
		if !w.Draining {
			takers++
		}
	}
	if takers == 0 {
		// Every live worker is cordoned or draining: the assignor ignores
		// cordons then, and nothing waits to move.
		return 0
	}
	reserved := map[shard.ID]bool{}
	for _, w := range f.Workers {
		if w.Returning {
			for _, id := range s.Assignments[w.ID].Shards {
				reserved[id] = true
			}
		}
	}
	owners := map[shard.ID]string{}
	var ids []shard.ID
	for _, sh := range f.Shards {
		if reserved[sh.ID] || (sh.State == ShardOwned && kept[sh.Owner]) {
			continue
		}
		ids = append(ids, sh.ID)
		if sh.State == ShardOwned {
			owners[sh.ID] = sh.Owner
		}
	}
	plan, err := rebalance.Compute(rebalance.Input{Shards: ids, Members: members, Owners: owners})
	if err != nil {
		return 0
	}
	n := 0
	for _, mv := range plan.Moves {
		if mv.From == "" {
			continue
		}
		if a, keyed := s.Assignments[mv.From]; keyed && !slices.Contains(a.Shards, mv.Shard) {
			continue // already handed off: in flight
		}
		n++
	}
	return n
}
