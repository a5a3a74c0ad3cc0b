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
)

var moveKindNames = [...]string{MoveAssigned: "assigned", MoveInitial: "initial", MoveRebalanced: "rebalanced", MoveOrphaned: "orphaned"}

// String is the kind's metric label: "assigned", "initial", "rebalanced"
// or "orphaned".
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
	// From is the previous owner's worker ID (MoveRebalanced, MoveOrphaned).
	From string
	// Note is the release's reason for MoveRebalanced ("drain",
	// "shutdown"), free text for MoveAssigned.
	Note string
}

// String is the reason in one phrase: "initial: never owned", "rebalanced
// from w2 (drain)", "orphaned: w7's session invalidated", "assigned
// (assignor epoch 12)".
func (r MoveReason) String() string {
	switch r.Kind {
	case MoveInitial:
		return "initial: never owned"
	case MoveRebalanced:
		return fmt.Sprintf("rebalanced from %s (%s)", r.From, r.Note)
	case MoveOrphaned:
		return fmt.Sprintf("orphaned: %s's session invalidated", r.From)
	}
	if r.Note == "" {
		return "assigned"
	}
	return fmt.Sprintf("assigned (%s)", r.Note)
}
