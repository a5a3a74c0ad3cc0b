package shard

import "fmt"

// Reason is why a shard moved, or why its owner let it go: one vocabulary
// from the assignor's decision (rebalance.Step) through the worker's
// assignment key, the worker's release, the lock's value (Owner) and the
// metrics' labels to every view. It is stored and labelled by its name
// (String).
type Reason uint8

// The reasons. Placements say why a free shard was given to a worker;
// hand-offs why a held one was taken out of its owner's assignment;
// releases why an owner let a lock go.
const (
	// ReasonUnknown: not said (a value written by hand, an old value).
	ReasonUnknown Reason = iota
	// ReasonInitial: placed; the shard was never owned.
	ReasonInitial
	// ReasonFree: placed; it was free for no move the assignor made (its
	// lock was released by its owner for its own reasons, or deleted).
	ReasonFree
	// ReasonOrphaned: placed; its owner's session ended without releasing
	// it (a crash, a partition, a pause past the TTL, a destroy).
	ReasonOrphaned
	// ReasonStuck: placed elsewhere; the worker it was given to took none
	// of its free shards for StuckAfter.
	ReasonStuck
	// ReasonRebalance: handed off; its owner was over its share (a join,
	// a weight change, a cordon lifted).
	ReasonRebalance
	// ReasonDrain: handed off; its owner drains (an operator's drain, or a
	// worker stopping without a rejoin grace).
	ReasonDrain
	// ReasonLoad: handed off; load balancing moved it to a member with
	// less load per capacity.
	ReasonLoad
	// ReasonOperator: released by an operator (shardctl release).
	ReasonOperator
	// ReasonShutdown: released by its worker as it stopped.
	ReasonShutdown
	// ReasonLost: released by its worker, which could not trust its claim
	// (the fence showed a newer owner, or the outcome of its acquire was
	// unknown).
	ReasonLost
	// ReasonClosed: released by its worker after its handler closed the
	// shard for a reshard (worker.Claim.Close): a parent whose last
	// effect is committed, never to be owned again.
	ReasonClosed
	reasonCount
)

var reasonNames = [reasonCount]string{
	ReasonUnknown: "unknown", ReasonInitial: "initial", ReasonFree: "free", ReasonOrphaned: "orphaned",
	ReasonStuck: "stuck", ReasonRebalance: "rebalance", ReasonDrain: "drain", ReasonLoad: "load",
	ReasonOperator: "operator", ReasonShutdown: "shutdown", ReasonLost: "lost", ReasonClosed: "closed",
}

// String is the reason's name: "initial", "orphaned", "load", …; the label
// of the metrics that count moves.
func (r Reason) String() string {
	if r < reasonCount {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// ParseReason is the reason named s, and false for a name it does not
// know.
func ParseReason(s string) (Reason, bool) {
	for r, name := range reasonNames {
		if name == s {
			return Reason(r), true
		}
	}
	return ReasonUnknown, false
}

// MarshalText writes the reason's name.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a reason's name; a name it does not know reads as
// ReasonUnknown, so that a value written by a later release still reads.
func (r *Reason) UnmarshalText(b []byte) error {
	*r, _ = ParseReason(string(b))
	return nil
}

// Why is why a shard moved: the reason, and the worker it came from
// (empty when it had no owner to come from).
type Why struct {
	Reason Reason `json:"reason"`
	From   string `json:"from,omitempty"`
}

// String is the move in one phrase, its reason's name first:
// "initial: never owned", "orphaned: w7's session invalidated", "load: from w3",
// "drain: from w2".
func (w Why) String() string {
	switch {
	case w.Reason == ReasonInitial:
		return "initial: never owned"
	case w.Reason == ReasonOrphaned && w.From != "":
		return fmt.Sprintf("orphaned: %s's session invalidated", w.From)
	case w.From != "":
		return fmt.Sprintf("%s: from %s", w.Reason, w.From)
	}
	return w.Reason.String()
}
