package rebalance

import (
	"time"

	"github.com/shardlease/shardlease/shard"
)

// State is everything one Step decides from, as the assignor read it from
// the coordinator. Step does not modify it.
type State struct {
	// Now is the assignor's clock when it read the state. Step reads no
	// clock: every time it writes or compares is Now or a time it wrote
	// before.
	Now time.Time
	// Shards is the fleet's shard set.
	Shards []shard.ID
	// Members are the live members only. Session must be the member's
	// current session: a new session is how Step recognises a restart or a
	// rejoin, which clears a stuck mark.
	Members []Member
	// Holders[i] is the live member whose session holds the lock of
	// Shards[i], or "" when none does; nil when no shard is held. Any other
	// length is invalid. A holder that is not in Members counts as free:
	// its session is gone or going (the lock may stay closed for its
	// lock-delay). Derive it by session, not by the name in the lock's
	// value: a lock still held by a member's previous session is not the
	// member's. A slice beside Shards rather than a map by shard ID, because
	// at 100,000 shards building and reading a map of that size would cost
	// more than the rest of a steady step.
	Holders []string
	// Assigned maps each worker that has an assignment key to the key as
	// last written, workers that are no longer live included.
	Assigned map[string]Assignment
	// Frozen: start no hand-off of a shard a live member holds (no
	// rebalancing, no drain); free shards are still placed. Hand-offs
	// already in flight finish.
	Frozen bool
	// Returning maps workers that said, when they stopped, that they will
	// be back (shard.Member.RejoinUntil) to the end of their grace. Until
	// Now reaches it, such a worker's key is kept as it is and its shards
	// (those of its key that no other live member holds, and while it is
	// still live those it holds) are given to nobody else: Step leaves them
	// out, and the worker, live or not, out of Members. A worker that joins
	// again clears its RejoinUntil, so it is no longer Returning and finds
	// its key unchanged. Past the grace the worker counts as gone, as
	// without one; Decision.Wake is at most the earliest end of a grace.
	Returning map[string]time.Time
	// Loads, when not nil, makes Step balance load instead of shard
	// counts: each shard's load (measured, or its static weight), balanced
	// against each member's capacity (Member.Weight) within Policy.Load's
	// tolerance band. A shard missing from Loads counts as the mean of the
	// others. Nil: count balance, exactly as without load awareness.
	Loads map[shard.ID]float64
	// Rules are the fleet's placement rules (shard.PlacementRule): a shard
	// goes only to a member every hard rule about it allows, and to one a
	// prefer rule selects when count balance leaves a choice (load
	// balance does not read prefer rules). A shard that no member may take
	// stays in no key (Decision.Unplaceable).
	Rules []shard.PlacementRule
}

// Member is a live member of the fleet as Step sees it.
type Member struct {
	ID string
	// Weight is the member's relative share of shards; ≤ 0 counts as 1.
	Weight int
	// Draining gives the member a quota of 0, so its shards move elsewhere.
	// If every member drains, draining is ignored: shards must go somewhere.
	Draining bool
	// Cordoned: the member keeps the shards it holds and is given none it
	// does not hold. Its quota is what it holds (none when it also drains);
	// the members not cordoned share the rest by weight. If every member is
	// cordoned, cordons are ignored: shards must go somewhere.
	Cordoned bool
	// Session is the member's current session: Step tells a restarted
	// member from the one it judged stuck by it.
	Session shard.SessionID
	// Zone is the member's failure domain (shard.Member.Zone; "" is one
	// too). Quotas are split among zones first, by the sum of their
	// members' weights, then within each zone, so each zone holds its
	// capacity's share within one shard. Counts only: with Loads, zones
	// are not balanced (see the package doc).
	Zone string
	// Labels are the member's labels (shard.Member.Labels), which
	// placement rules select members by.
	Labels map[string]string
	// Standby says the member's worker runs standbys (its handler has a
	// standby side): a planned move to it is warm. Standbys is the state
	// of each standby it runs, as it reported it (shard.Member.Standby).
	Standby  bool
	Standbys map[shard.ID]shard.StandbyState
}

// Assignment is one worker's assignment key: the shards it should own, and
// what Step must remember about it. The assignor keeps no other state, so
// every field must be stored in the key and given back in State.Assigned.
type Assignment struct {
	// Shards are the shards assigned, sorted. In State any order is
	// accepted; Step always returns them sorted.
	Shards []shard.ID
	// Since is when Shards last changed (Now of the Step that changed it).
	Since time.Time
	// Waiting and WaitingSince are the worker's current wait: how many of
	// Shards were free (no live holder) when Step last recorded it, and
	// since when the worker has taken none of them; both zero while none is
	// free. Step judges the worker stuck when the count has not gone down
	// StuckAfter after WaitingSince. A worker that took some starts a new
	// wait, so a large assignment taken slowly is not mistaken for a stuck
	// worker; shards added to a worker that took none extend the count, not
	// the time.
	Waiting      int
	WaitingSince time.Time
	// Free lists, sorted, the shards of Shards that had no live holder when
	// Step wrote the key. A change of Free alone rewrites the key: it is how
	// a worker that watches only its key learns that a lock it took is
	// gone (released or deleted by an operator) and must be taken again.
	// In State it is only compared with the present.
	Free []shard.ID
	// StuckSession is the member session the wait and the stuck mark are
	// about: a member with another session (it restarted or rejoined) is
	// not stuck and waits afresh.
	//
	// Stuck: Step judged the worker stuck under StuckSession, because the
	// count of free shards in its assignment did not go down for
	// Policy.StuckAfter. While the worker keeps that session it is given
	// nothing new and its free assigned shards went elsewhere; a member with
	// another session is not stuck, and Step clears the mark.
	Stuck        bool
	StuckSession shard.SessionID
	// Verdicts counts the stuck verdicts Step gave under StuckSession, the
	// last one at StuckSince. A verdict does not last for the session:
	// StuckAfter·2^Verdicts after StuckSince (at most 64·StuckAfter) the
	// worker goes on probation — no longer stuck, it may be given one
	// shard more than it holds. Taking a shard it was given is the
	// evidence of progress that ends the probation (Verdicts goes back to
	// 0); taking none of them for StuckAfter is the next verdict. So a
	// worker judged stuck only because its view of its key lagged is given
	// its share again after one probation, while a worker that is really
	// stuck costs the fleet one shard's StuckAfter per probation, at
	// doubling intervals.
	Verdicts   int
	StuckSince time.Time
	// Arrived maps shards of Shards to when Step added them to this key,
	// for the minimum residence of load balancing (LoadPolicy.MinResidence):
	// a shard that arrived less than that ago is not moved for load. Step
	// records it only while it balances load, and drops an entry, when it
	// writes the key anyway, once the residence is over; a shard without an
	// entry is free to move. Nil in count balance.
	Arrived map[shard.ID]time.Time
	// OutOfBand is since when Step has seen the worker's load per capacity
	// outside the band (zero while it is inside, and in count balance):
	// load moves correct it once that is LoadPolicy.Patience ago.
	OutOfBand time.Time
	// Standby lists, sorted, the shards the worker is to run a standby
	// for (shard.Assignment.Standby): those a warm move brings it, from
	// the start of their preparation until it holds them, and those it
	// backs up for failover (Policy.Standbys). Preparing maps those a warm
	// move brings it to when the move started to prepare.
	Standby   []shard.ID
	Preparing map[shard.ID]time.Time
}

// Policy paces Step. Its zero value is the default.
type Policy struct {
	// MaxMovesInFlight caps the hand-offs in flight across the fleet: shards
	// held by a live member but not in its assignment (taken out of it and
	// not yet released). Step starts a hand-off only while fewer are in
	// flight; placing a free shard is never capped. ≤ 0 means
	// DefaultMaxMovesInFlight.
	MaxMovesInFlight int
	// StuckAfter: a live worker whose assignment lists free shards and that
	// took none of them for this long is judged stuck. It must exceed the
	// longest a healthy worker may need before it can take a shard it was
	// given: the lock-delay of a shard freed by a session that ended (it
	// cannot be acquired before), or the rest of the TTL and then the
	// lock-delay of a lock still held by a session that is no live member's
	// (a worker that rejoined before its old session expired), plus the
	// worker's retry interval and one acquire round trip. The worker package
	// passes Config.EffectiveStuckAfter. ≤ 0 means DefaultStuckAfter.
	StuckAfter time.Duration
	// Load tunes load balancing (used only when State.Loads is not nil).
	Load LoadPolicy
	// PrepareTimeout is the longest a warm move waits for its target's
	// standby to be ready before it hands the shard over anyway, cold
	// (Decision.Cold). ≤ 0 means DefaultPrepareTimeout.
	PrepareTimeout time.Duration
	// Standbys is how many standbys for failover each owned shard has,
	// on other members that run standbys (other zones first), so that a
	// lost owner's shard goes to the most advanced of them (warm.go). 0:
	// none (standbys only for warm moves).
	Standbys int
}

// DefaultPrepareTimeout is Policy.PrepareTimeout's default: long enough
// for a standby to restore a state that takes tens of seconds to build,
// short enough that a standby that never gets ready delays a drain by a
// minute, not for ever.
const DefaultPrepareTimeout = time.Minute

// LoadPolicy tunes load-aware balancing; zero fields (and negative or
// NaN ones) take their defaults. See the package doc, "Load balancing".
type LoadPolicy struct {
	// Tolerance is the band around the mean load per unit of capacity
	// that every member is kept inside, as a fraction (0.10: ±10 %).
	// DefaultTolerance when ≤ 0.
	Tolerance float64
	// MinResidence is how long a shard stays on the member it moved to
	// before a load move may take it away again (a drain or a failover
	// still moves it). DefaultMinResidence when ≤ 0.
	MinResidence time.Duration
	// MinGain is how much a load move must narrow the gap between the
	// load per capacity of the member it leaves and the member it joins,
	// as a fraction of the mean, to be made. DefaultMinGain when ≤ 0.
	MinGain float64
	// Patience is how long a member must stay outside the band before
	// load moves correct it, so that a fluctuation that passes by itself
	// moves nothing. DefaultPatience when ≤ 0.
	Patience time.Duration
}

// LoadPolicy's defaults. A band of ±10 % is issue 17's; a residence of a
// minute outlasts the smoothing of a measured load, so a shard is not
// moved again on the noise its own move caused; a gain of 2 % of the mean
// keeps moves that only shuffle the noise from being made; a patience of
// 10 s lets a fluctuation of a few seconds pass (a load reported with the
// worker's default 10 s half-life) and still corrects a lasting imbalance
// within issue 17's 30 s (the step-alone scenario: 31 s at worst, against
// 42 s with 15 s and more moves under noise with 5 s).
const (
	DefaultTolerance    = 0.10
	DefaultMinResidence = time.Minute
	DefaultMinGain      = 0.02
	DefaultPatience     = 10 * time.Second
)

// withDefaults returns p with its zero, negative and NaN fields set to
// their defaults.
func (p LoadPolicy) withDefaults() LoadPolicy {
	if !(p.Tolerance > 0) {
		p.Tolerance = DefaultTolerance
	}
	if p.MinResidence <= 0 {
		p.MinResidence = DefaultMinResidence
	}
	if !(p.MinGain > 0) {
		p.MinGain = DefaultMinGain
	}
	if p.Patience <= 0 {
		p.Patience = DefaultPatience
	}
	return p
}

// DefaultStuckAfter is Policy.StuckAfter's default: twice shard.FastPolicy's
// lock-delay of 800 ms, rounded up. A fleet with a longer TTL or lock-delay
// must pass a longer StuckAfter (the worker package does).
const DefaultStuckAfter = 2 * time.Second

// DefaultMaxMovesInFlight is Policy.MaxMovesInFlight's default for a fleet
// of the given size: max(16, ⌈shards/members⌉), one member's share. A join
// or the drain of one member then runs as one wave of hand-offs, while a
// larger reshuffle (weights changed, many members drained at once) is paced.
func DefaultMaxMovesInFlight(shards, members int) int {
	share := (shards + max(members, 1) - 1) / max(members, 1)
	return max(16, share)
}

// Decision is what one Step decided.
type Decision struct {
	// Assign holds the new key of every live member whose key must change
	// (its shards, its wait or its stuck mark); members not listed keep
	// theirs. A member without a key has an empty assignment.
	Assign map[string]Assignment
	// Delete lists, sorted, the workers whose key must be deleted: every
	// worker in State.Assigned that is not a live member. Until it is gone a
	// key of a worker that is not live is ignored.
	Delete []string
	// Wake is the earliest time Step must run again even if nothing changes
	// (when a worker with free shards assigned would be judged stuck); zero
	// when only a change needs a new Step.
	Wake time.Time
	// Moves lists the hand-offs started by this Step (From is removed from
	// the shard's holder's assignment and releases it; To is the member it
	// is meant for, which may still change once it is free) and the
	// placements (From is "": the free shard was added to To's assignment),
	// sorted by shard. It is for logs and metrics: Assign is the decision.
	Moves []Transfer
	// ByLoad: Step balanced load (State.Loads was not nil, and not the
	// same for every shard). The hand-offs it starts from members that do
	// not drain are then load moves (shard.ReasonLoad), which a worker may say
	// when it releases them.
	ByLoad bool
	// Band is the load band as Step judged it before its load moves (nil
	// in count balance): what operators' views show of the fleet's load.
	Band *Band
	// Preparing lists the warm moves waiting for their target's standby
	// (From keeps the shard meanwhile), and Cold those this step handed
	// off without a ready standby because PrepareTimeout passed; both
	// sorted by shard, for logs and metrics.
	Preparing, Cold []Transfer
	// Unplaceable lists, sorted, the shards that hard placement rules let
	// no member be given now (none allows it, or those that do are
	// cordoned or stuck) and that no member they allow holds: they are in
	// no key, and one held by a member the rules exclude is released.
	Unplaceable []shard.ID
}

// Band is the load band as one Step judged it, on the shards' targets
// after its placements: its centre, and each member's load per capacity
// divided by it. The band is [1 − Tolerance, 1 + Tolerance].
type Band struct {
	// Mean is the band's centre: the load per capacity of the eligible
	// members that are not pinned.
	Mean      float64
	Tolerance float64
	// Ratio is each eligible member's load per capacity over Mean; a
	// pinned member counts its heaviest shard as the mean (the step moves
	// its other shards, never that one).
	Ratio map[string]float64
	// Pinned are the members whose heaviest shard alone puts them above
	// the band, sorted.
	Pinned []string
}

// Transfer is one shard Step moved, and why: a placement's reason
// (shard.ReasonFree — a shard nobody's key lists, never owned or released
// by a hand-off —, shard.ReasonOrphaned, shard.ReasonStuck, or a pending hand-off's
// reason) or a hand-off's (shard.ReasonRebalance, shard.ReasonDrain, shard.ReasonLoad).
type Transfer struct {
	Shard    shard.ID
	From, To string
	Reason   shard.Reason
}

// Step is one decision of the fleet's assignor: from the state it read, the
// assignment keys to write and delete, and when to run again. It is pure: no
// clock, no I/O, no randomness, and the order of slices and maps in s does
// not matter. See the package doc for what a Decision guarantees. The only
// error wraps ErrInvalidInput.
func Step(s State, p Policy) (Decision, error) {
	read := s
	s, until, kept := reserve(s)
	sc := scratchPool.Get().(*scratch)
	defer sc.release()
	in, err := readState(s, sc)
	if err != nil {
		return Decision{}, err
	}
	if p.MaxMovesInFlight <= 0 {
		p.MaxMovesInFlight = DefaultMaxMovesInFlight(len(in.shards), len(in.members))
	}
	if p.StuckAfter <= 0 {
		p.StuckAfter = DefaultStuckAfter
	}
	if p.PrepareTimeout <= 0 {
		p.PrepareTimeout = DefaultPrepareTimeout
	}
	p.Load = p.Load.withDefaults()
	st := newStep(in, p)
	st.judge()
	st.plan()
	st.decide()
	d := st.decision()
	if kept != nil {
		carryStandbys(read, kept, &d)
	}
	if !until.IsZero() && (d.Wake.IsZero() || until.Before(d.Wake)) {
		d.Wake = until
	}
	return d, nil
}
