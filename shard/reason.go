package shard

import "fmt"

// MoveKind is why a shard was free when the assignor placed it; it is the
// label of the worker's acquisitions metric.
type MoveKind uint8

const (
	// MoveAssigned: no reason known (the zero value), e.g. an assignment
	// written without reasons.
	MoveAssigned MoveKind = iota
	// MoveInitial: the shard was never owned.
	MoveInitial
	// MoveRebalanced: its previous owner released it (a drain, a
	// shutdown, a hand-off).
	MoveRebalanced
	// MoveOrphaned: its previous owner's session ended without a release.
	MoveOrphaned
	// MoveLoad: its previous owner released it for load balancing (the
	// assignor moved it to a worker with less load per capacity).
	MoveLoad
)

var moveKindNames = [...]string{MoveAssigned: "assigned", MoveInitial: "initial", MoveRebalanced: "rebalanced", MoveOrphaned: "orphaned", MoveLoad: "load"}

// ReleasedForLoad is the release reason (Owner.Released) of a shard its
// worker gave up for load balancing; a shard released so is placed as
// MoveLoad.
const ReleasedForLoad = "load"

// String is the kind's metric label: "assigned", "initial", "rebalanced",
// "orphaned" or "load".
func (k MoveKind) String() string {
	if int(k) < len(moveKindNames) {
		return moveKindNames[k]
	}
	return fmt.Sprintf("MoveKind(%d)", k)
}

// parseMoveKind is the inverse of String, for the stored form.
func parseMoveKind(s string) (MoveKind, bool) {
	for k, name := range moveKindNames {
		if name == s {
			return MoveKind(k), true
		}
	}
	return 0, false
}

// MoveReason says why a shard was free when the assignor placed it. The
// worker writes its String into the shard lock's value (Owner.Reason) when
// it takes the shard, for operators, and counts the acquisition under Kind.
type MoveReason struct {
	Kind MoveKind
	// From is the previous owner's worker ID (MoveRebalanced, MoveOrphaned,
	// MoveLoad).
	From string
	// Note is the release's reason for MoveRebalanced ("drain",
	// "shutdown"), free text for MoveAssigned.
	Note string
}

// String is the reason in one phrase: "initial: never owned", "rebalanced
// from w2 (drain)", "orphaned: w7's session invalidated", "load: from w3",
// "assigned (assignor epoch 12)".
func (r MoveReason) String() string {
	switch r.Kind {
	case MoveInitial:
		return "initial: never owned"
	case MoveRebalanced:
		return fmt.Sprintf("rebalanced from %s (%s)", r.From, r.Note)
	case MoveOrphaned:
		return fmt.Sprintf("orphaned: %s's session invalidated", r.From)
	case MoveLoad:
		return fmt.Sprintf("load: from %s", r.From)
	}
	if r.Note == "" {
		return "assigned"
	}
	return fmt.Sprintf("assigned (%s)", r.Note)
}
