package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Kind is a kind of fault (or membership change) the schedule injects.
type Kind string

// The kinds of fault. Each one with a duration (For) is healed by a second
// event of the same kind with Heal set.
const (
	// Crash abandons a worker: its coordinator calls fail, its handlers
	// freeze and never write again, nothing is released. Its session must
	// expire.
	Crash Kind = "crash"
	// Pause freezes a worker's handlers (a commit in hand) and hangs its
	// coordinator calls for For; then it resumes and sends the commit with
	// its old token.
	Pause Kind = "pause"
	// PartitionFail cuts a worker off from the coordinator for For: every
	// call fails at once. The offset store stays reachable.
	PartitionFail Kind = "partition-fail"
	// PartitionHang is PartitionFail with calls that hang instead.
	PartitionHang Kind = "partition-hang"
	// ClockJump moves the coordinator's clock forward by Size: sessions
	// expire early as measured by the workers' clocks.
	ClockJump Kind = "clock-jump"
	// Join starts a worker under a new ID.
	Join Kind = "join"
	// Restart starts a crashed worker again under its old ID.
	Restart Kind = "restart"
	// Leave stops a worker gracefully.
	Leave Kind = "leave"
	// SlowHandlers makes a worker's handler steps take up to Size each,
	// ignoring their context, for For.
	SlowHandlers Kind = "slow-handlers"
	// SlowRenewals delays a worker's session renewals by Size for For:
	// before the request reaches the coordinator or, with LateReply,
	// after it was applied.
	SlowRenewals Kind = "slow-renewals"
	// Destroy: a third party (an operator, a script, a failed node or
	// check) destroys the worker's current session on the coordinator.
	// Without For, the worker hears of it on its member key and steps
	// down at once. With For, its coordinator calls hang from that
	// instant for For, as in PartitionHang: it cannot hear of it, and
	// only its local deadline and the lock-delay rule keep the next owner
	// from starting beside it.
	Destroy Kind = "destroy"
	// StaleAssignment serves a worker's Assignments.Watch stale for For:
	// each answer Size after the coordinator gave it and, with Replay, an
	// older answer once again after each new one, so that the worker acts
	// on an assignment the assignor has since changed.
	StaleAssignment Kind = "stale-assignment"
	// Rejoin stops a worker gracefully with a rejoin grace of Size and,
	// at its heal For later, starts it again under the same ID: the
	// assignor keeps its shards, idle, for it until the grace ends.
	Rejoin Kind = "rejoin"
	// Reshard starts a reshard of the fleet to Shards shards of lineage
	// Lineage, as an operator would (admin.Operator.Reshard); it is
	// refused while another reshard runs.
	Reshard Kind = "reshard"
	// ReshardCancel cancels the reshard in progress
	// (admin.Operator.CancelReshard); it is refused once a child opened.
	ReshardCancel Kind = "reshard-cancel"
)

// Kinds lists every kind, in the order reports use.
var Kinds = []Kind{Crash, Pause, PartitionFail, PartitionHang, ClockJump, Join, Restart, Leave, SlowHandlers, SlowRenewals, Destroy, StaleAssignment, Rejoin,
	Reshard, ReshardCancel}

// Event is one step of a schedule.
type Event struct {
	At     time.Duration // since the start of the run
	Kind   Kind
	Worker string        // empty for ClockJump
	Heal   bool          // the end of a fault that lasts For
	For    time.Duration // how long the fault lasts
	// Size: jump size, renewal latency, longest handler step, how late a
	// stale assignment comes; for a Pause of the assignor, how long it
	// stays armed waiting for an Assign to freeze in hand.
	Size time.Duration
	// LateReply: a slow renewal is applied at once and its reply delayed,
	// rather than the request delayed.
	LateReply bool
	// Assignor: the fault strikes whoever holds P/assignor when it fires
	// (Worker is empty in the schedule and filled in when played); a
	// Restart with it restarts the worker the last such Crash struck.
	Assignor bool
	// Replay: a stale assignment also replays an older answer.
	Replay bool
	// NoHolder: when the assignor fault was played nobody held P/assignor
	// (an election under way), so it struck a running worker picked from
	// the seed instead; it is not counted as striking the assignor.
	NoHolder bool
	// Shards and Lineage are a Reshard's new shard count and lineage.
	Shards  int
	Lineage shard.Lineage
}

// target names the event's worker: for an assignor fault, the role and,
// once played, who held it.
func (e Event) target() string {
	switch {
	case !e.Assignor:
		return e.Worker
	case e.Kind == Restart:
		return "the crashed assignor" + paren(e.Worker)
	}
	if e.NoHolder {
		return "assignor (none held the role; " + e.Worker + " instead)"
	}
	return "assignor" + paren(e.Worker)
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%-8v ", e.At)
	if e.Heal {
		fmt.Fprintf(&b, "end %s %s", e.Kind, e.target())
		switch e.Kind {
		case Destroy:
			b.WriteString(" (reconnected)")
		case Rejoin:
			b.WriteString(" (started again)")
		}
		return b.String()
	}
	b.WriteString(string(e.Kind))
	if t := e.target(); t != "" {
		b.WriteString(" " + t)
	}
	if e.Kind == Rejoin {
		b.WriteString(e.rejoinString())
		return b.String()
	}
	if e.Kind == Destroy {
		b.WriteString("'s session")
		if e.For > 0 {
			fmt.Fprintf(&b, ", cut off (calls hang) for %v", e.For)
		}
		return b.String()
	}
	if e.For > 0 {
		fmt.Fprintf(&b, " for %v", e.For)
	}
	switch e.Kind {
	case ClockJump:
		fmt.Fprintf(&b, " by +%v", e.Size)
	case Reshard:
		fmt.Fprintf(&b, " to %d shards, lineage %s", e.Shards, e.Lineage)
	case SlowHandlers:
		fmt.Fprintf(&b, " (steps up to %v)", e.Size)
	case SlowRenewals:
		when := "request delayed"
		if e.LateReply {
			when = "reply delayed"
		}
		fmt.Fprintf(&b, " (%v, %s)", e.Size, when)
	case Pause:
		if e.Assignor {
			fmt.Fprintf(&b, " (from its next Assign, or %v in)", e.Size)
		}
	case StaleAssignment:
		fmt.Fprintf(&b, " (answers %v late", e.Size)
		if e.Replay {
			b.WriteString(", an older one replayed after each")
		}
		b.WriteString(")")
	}
	return b.String()
}
