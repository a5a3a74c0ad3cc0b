package shard

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Assignment is a worker's assignment key, P/assign/<worker>: the shards
// the assignor wants the worker to own. It is advice, never authority: a
// shard is owned by whoever holds its lock, whatever any assignment says.
// Only the assignor writes assignment keys (Assignments.Assign); each
// worker watches its own (Assignments.Watch).
type Assignment struct {
	// Epoch is the assignor epoch that wrote the key. Assign sets it.
	Epoch Token `json:"epoch"`
	// Since is when the worker's shard set last changed, as the assignor
	// says (Assign writes it as given).
	Since time.Time `json:"since"`
	// Shards are the shards assigned, in the config's order, each once.
	Shards []ID `json:"shards"`
	// Free are the shards of Shards that had no live holder in the listing
	// the assignor decided from, whose index is AsOf. A worker that runs
	// one of them under a claim whose token is at most AsOf has lost its
	// lock (an operator released or deleted it): it is how a worker that
	// reads nothing but this key learns of it.
	Free []ID   `json:"free,omitempty"`
	AsOf uint64 `json:"as_of,omitempty"`
	// Why says, for shards of Free, why each was free as the assignor saw
	// it (see MoveReason).
	Why map[ID]MoveReason `json:"why,omitempty"`
	// Draining is the worker's drain flag as the assignor saw it on its
	// member key: the shards it takes out then are a drain's hand-offs.
	Draining bool `json:"draining,omitempty"`
	// Waiting and WaitingSince are the assignor's memory of how long the
	// worker has been given free shards without taking them (see
	// rebalance.Assignment); kept in the key so a new assignor carries on.
	Waiting      int       `json:"waiting,omitempty"`
	WaitingSince time.Time `json:"waiting_since,omitzero"`
	// Stuck is set while the assignor judges the worker stuck (it was given
	// shards and did not take them); StuckSession is the session it judged,
	// so that a worker that came back with a new session can tell the mark
	// is not about it.
	Stuck        bool      `json:"stuck,omitempty"`
	StuckSession SessionID `json:"stuck_session,omitempty"`
	// ByLoad is set when the assignor balanced load (not counts) when it
	// wrote the key: a shard taken out of it, unless the worker drains, is
	// a load move, and the worker says "load" when it releases it.
	ByLoad bool `json:"by_load,omitempty"`
	// Arrived and OutOfBand are the assignor's memory for load balancing
	// (see rebalance.Assignment): when recently placed shards arrived, for
	// their minimum residence, and since when the worker's load has been
	// outside the band. Kept in the key so a new assignor carries on.
	Arrived   map[ID]time.Time `json:"arrived,omitempty"`
	OutOfBand time.Time        `json:"out_of_band,omitzero"`
}

// AssignmentKey is one assignment key as Assignments.Watch sees it.
type AssignmentKey struct {
	// Index is the blocking-query index to wait on next (see NextIndex).
	Index uint64
	// Exists is false when the key is missing (deleted, or never written).
	Exists bool
	// Assignment is the key's value. Valid only when Exists and Problem is
	// empty.
	Assignment Assignment
	// Problem is non-empty when the key exists but its value cannot be
	// read as an assignment of this fleet: it says what is wrong.
	Problem string
}

// assignmentValue is the stored form of an Assignment: the shard set as
// compact index ranges, so that a worker's key stays small at 10,000
// shards.
type assignmentValue struct {
	Epoch        Token             `json:"epoch"`
	Since        time.Time         `json:"since"`
	Shards       string            `json:"shards"`
	Free         string            `json:"free,omitempty"`
	AsOf         uint64            `json:"as_of,omitempty"`
	Reasons      []reasonValue     `json:"reasons,omitempty"`
	LegacyWhy    map[string]string `json:"why,omitempty"` // reason text → its shards: the untyped form, read so that a key an older assignor wrote still decodes
	Draining     bool              `json:"draining,omitempty"`
	Waiting      int               `json:"waiting,omitempty"`
	WaitingSince time.Time         `json:"waiting_since,omitzero"`
	Stuck        bool              `json:"stuck,omitempty"`
	StuckSession SessionID         `json:"stuck_session,omitempty"`
	ByLoad       bool              `json:"by_load,omitempty"`
	Arrived      []arrivalValue    `json:"arrived,omitempty"`
	OutOfBand    time.Time         `json:"out_of_band,omitzero"`
}

// arrivalValue is the stored form of the shards that arrived at one time,
// as index ranges: a step places many shards at once, so grouping by time
// keeps the key small.
type arrivalValue struct {
	At     time.Time `json:"at"`
	Shards string    `json:"shards"`
}

// reasonValue is the stored form of one MoveReason and its shards as
// index ranges.
type reasonValue struct {
	Kind   string `json:"kind"`
	From   string `json:"from,omitempty"`
	Note   string `json:"note,omitempty"`
	Shards string `json:"shards"`
}

// EncodeAssignment returns the value of an assignment key for a: JSON
// {"epoch", "since", "shards", "free", "as_of", "reasons", "draining",
// "waiting", "waiting_since", "stuck", "stuck_session", "by_load",
// "arrived", "out_of_band"} with the shard sets as EncodeSet writes them,
// sorted index ranges ("0-99,150"). A shard outside c wraps
// ErrUnknownShard, a shard listed twice ErrInvalidArgument.
func (c Config) EncodeAssignment(a Assignment) ([]byte, error) {
	set, err := c.EncodeSet(a.Shards)
	if err != nil {
		return nil, err
	}
	free, err := c.EncodeSet(a.Free)
	if err != nil {
		return nil, fmt.Errorf("free shards: %w", err)
	}
	var reasons []reasonValue
	if len(a.Why) > 0 {
		byReason := map[MoveReason][]ID{}
		for id, r := range a.Why {
			byReason[r] = append(byReason[r], id)
		}
		for r, ids := range byReason {
			set, err := c.EncodeSet(ids)
			if err != nil {
				return nil, fmt.Errorf("reason %q: %w", r, err)
			}
			reasons = append(reasons, reasonValue{Kind: r.Kind.String(), From: r.From, Note: r.Note, Shards: set})
		}
		// Sorted by shard ranges, so that equal assignments encode equally.
		slices.SortFunc(reasons, func(x, y reasonValue) int { return strings.Compare(x.Shards, y.Shards) })
	}
	arrived, err := c.encodeArrivals(a.Arrived)
	if err != nil {
		return nil, err
	}
	return json.Marshal(assignmentValue{Epoch: a.Epoch, Since: a.Since, Shards: set, Free: free, AsOf: a.AsOf, Reasons: reasons, Draining: a.Draining,
		Waiting: a.Waiting, WaitingSince: a.WaitingSince, Stuck: a.Stuck, StuckSession: a.StuckSession,
		ByLoad: a.ByLoad, Arrived: arrived, OutOfBand: a.OutOfBand})
}

// encodeArrivals groups arrival times by instant, each group's shards as
// index ranges, sorted by time.
func (c Config) encodeArrivals(arrived map[ID]time.Time) ([]arrivalValue, error) {
	if len(arrived) == 0 {
		return nil, nil
	}
	byTime := map[int64][]ID{}
	at := map[int64]time.Time{}
	for id, t := range arrived {
		k := t.UnixNano()
		byTime[k] = append(byTime[k], id)
		at[k] = t
	}
	out := make([]arrivalValue, 0, len(byTime))
	for _, k := range slices.Sorted(maps.Keys(byTime)) {
		set, err := c.EncodeSet(byTime[k])
		if err != nil {
			return nil, fmt.Errorf("arrivals at %v: %w", at[k], err)
		}
		out = append(out, arrivalValue{At: at[k], Shards: set})
	}
	return out, nil
}

// DecodeAssignment reads an assignment key's value written by
// EncodeAssignment for the same config; Shards is nil for an empty set.
// The error says what is wrong with the value; it never panics, whatever
// the value.
func (c Config) DecodeAssignment(value []byte) (Assignment, error) {
	var v assignmentValue
	if err := json.Unmarshal(value, &v); err != nil {
		return Assignment{}, fmt.Errorf("malformed assignment value (want JSON {epoch, since, shards, free, as_of, reasons, draining, waiting, waiting_since, stuck, stuck_session, by_load, arrived, out_of_band}): %w", err)
	}
	if v.Epoch == 0 {
		return Assignment{}, fmt.Errorf("assignment value names no epoch: no assignor wrote it")
	}
	ids, err := c.DecodeSet(v.Shards)
	if err != nil {
		return Assignment{}, fmt.Errorf("assignment value's shards %q: %w", v.Shards, err)
	}
	free, err := c.DecodeSet(v.Free)
	if err != nil {
		return Assignment{}, fmt.Errorf("assignment value's free shards %q: %w", v.Free, err)
	}
	if v.Waiting < 0 {
		return Assignment{}, fmt.Errorf("assignment value's waiting %d is negative", v.Waiting)
	}
	var why map[ID]MoveReason
	add := func(r MoveReason, set string) error {
		ids, err := c.DecodeSet(set)
		if err != nil {
			return fmt.Errorf("assignment value's shards for reason %q: %w", r, err)
		}
		if why == nil {
			why = map[ID]MoveReason{}
		}
		for _, id := range ids {
			why[id] = r
		}
		return nil
	}
	for _, rv := range v.Reasons {
		kind, ok := parseMoveKind(rv.Kind)
		if !ok {
			return Assignment{}, fmt.Errorf("assignment value's reason kind %q is not one of %q", rv.Kind, moveKindNames)
		}
		if err := add(MoveReason{Kind: kind, From: rv.From, Note: rv.Note}, rv.Shards); err != nil {
			return Assignment{}, err
		}
	}
	// A key written by a release that stored reasons as text: the text is
	// kept for operators, the kind is unknown.
	for text, set := range v.LegacyWhy {
		if err := add(MoveReason{Note: text}, set); err != nil {
			return Assignment{}, err
		}
	}
	var arrived map[ID]time.Time
	for _, av := range v.Arrived {
		ids, err := c.DecodeSet(av.Shards)
		if err != nil {
			return Assignment{}, fmt.Errorf("assignment value's shards arrived at %v: %w", av.At, err)
		}
		if arrived == nil {
			arrived = map[ID]time.Time{}
		}
		for _, id := range ids {
			arrived[id] = av.At
		}
	}
	return Assignment{Epoch: v.Epoch, Since: v.Since, Shards: ids, Free: free, AsOf: v.AsOf, Why: why, Draining: v.Draining,
		Waiting: v.Waiting, WaitingSince: v.WaitingSince, Stuck: v.Stuck, StuckSession: v.StuckSession,
		ByLoad: v.ByLoad, Arrived: arrived, OutOfBand: v.OutOfBand}, nil
}
