package fleetview

import "github.com/shardlease/shardlease/rebalance"

// Queue is the fleet's move queue as a listing shows it: the hand-offs in
// flight against the assignor's budget, and those the assignor's step
// wants that have not started (they wait for room under the budget, or
// for the freeze to be lifted).
type Queue struct {
	// InFlight are the hand-offs in flight (Summary.HandOffs): shards held
	// by a live worker whose assignment key no longer lists them. They are
	// what counts against the budget.
	InFlight int `json:"in_flight"`
	// Budget is the assignor's MaxMovesInFlight when the viewer knows it
	// (Input.MaxMovesInFlight); 0: unknown.
	Budget int `json:"budget,omitempty"`
	// Queued are the hand-offs not started: those the assignor's own step
	// (assignor.Plan, uncapped and unfrozen) would start on this listing.
	Queued int `json:"queued"`
}

// handOffs counts the hand-offs a plan of the assignor's step starts.
func handOffs(d rebalance.Decision) int {
	n := 0
	for _, mv := range d.Moves {
		if mv.From != "" {
			n++
		}
	}
	return n
}
