package shard

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Assignment is a worker's assignment key, P/assign/<worker>/shards: what
// the assignor wants the worker to own, and why each change. It says only
// what a worker needs; the assignor's own memory about the worker travels
// beside it (Memory) and is never shown to the worker. It is advice, never
// authority: a shard is owned by whoever holds its lock, whatever any
// assignment says. Only the assignor writes assignment keys
// (Assignments.Assign); each worker watches its own (Assignments.Watch).
type Assignment struct {
	// Epoch is the assignor epoch that wrote the key. Assign sets it.
	Epoch Token `json:"epoch"`
	// Shards are the shards assigned, in the config's order, each once.
	Shards []ID `json:"shards"`
	// Free are the shards of Shards that had no live holder in the listing
	// the assignor decided from, whose index is AsOf. A worker that runs
	// one of them under a claim whose token is at most AsOf has lost its
	// lock (an operator released or deleted it): it is how a worker that
	// reads nothing but this key learns of it.
	Free []ID   `json:"free,omitempty"`
	AsOf uint64 `json:"as_of,omitempty"`
	// Why says, for shards of Free, why each was given to the worker (the
	// worker records it in the lock's value when it takes the shard).
	Why map[ID]Why `json:"why,omitempty"`
	// Release says, for shards the worker holds that are not in Shards,
	// why each is taken from it: the reason it records when it releases
	// the lock. A held shard missing from both is released as
	// ReasonRebalance.
	Release map[ID]Why `json:"release,omitempty"`
	// Loads asks the worker to report its shards' loads
	// (Members.ReportLoad): the fleet balances load.
	Loads bool `json:"loads,omitempty"`
	// Memory is what the assignor remembers about the worker, in the
	// assignor's own format (package assignor): written with the key in
	// the same transaction, listed in snapshots for the next assignor, and
	// never part of what Assignments.Watch gives the worker.
	Memory []byte `json:"-"`
}

// AssignmentKey is one assignment key as Assignments.Watch sees it.
type AssignmentKey struct {
	// Index is the blocking-query index to wait on next (see NextIndex).
	Index uint64
	// Exists is false when the key is missing (deleted, or never written).
	Exists bool
	// Assignment is the key's value (Memory empty). Valid only when Exists
	// and Problem is empty.
	Assignment Assignment
	// Problem is non-empty when the key exists but is not the assignor's
	// word: its value cannot be read as an assignment of this fleet, or it
	// was not written by an assignor's transaction (see Sealed). It says
	// what is wrong.
	Problem string
}

// Unsealed is the Problem of an assignment key whose value and memory
// were not written by one transaction: the value was written by hand
// (however well formed), or the memory was. Coordinators seal a key by
// writing it and its memory in one transaction, so that both carry the
// same modify index; a plain write of either moves only its own.
const Unsealed = "not written by an assignor (its value and the assignor's memory were not written together): an edit, not a decision"

// assignmentValue is the stored form of an Assignment: the shard sets as
// compact index ranges, so that a worker's key stays small at 10,000
// shards, and the reasons grouped by reason and source.
type assignmentValue struct {
	Epoch   Token      `json:"epoch"`
	Shards  string     `json:"shards"`
	Free    string     `json:"free,omitempty"`
	AsOf    uint64     `json:"as_of,omitempty"`
	Why     []whyValue `json:"why,omitempty"`
	Release []whyValue `json:"release,omitempty"`
	Loads   bool       `json:"loads,omitempty"`
}

// whyValue is one Why and its shards as index ranges.
type whyValue struct {
	Why
	Shards string `json:"shards"`
}

// EncodeAssignment returns the value of an assignment key for a (its
// Memory is not part of it): JSON {"epoch", "shards", "free", "as_of",
// "why", "release", "loads"} with the shard sets as EncodeSet writes them, sorted
// index ranges ("0-99,150"), and each reason with its shards. A shard
// outside c wraps ErrUnknownShard, a shard listed twice
// ErrInvalidArgument.
func (c Config) EncodeAssignment(a Assignment) ([]byte, error) {
	set, err := c.EncodeSet(a.Shards)
	if err != nil {
		return nil, err
	}
	free, err := c.EncodeSet(a.Free)
	if err != nil {
		return nil, fmt.Errorf("free shards: %w", err)
	}
	why, err := c.encodeWhys(a.Why)
	if err != nil {
		return nil, err
	}
	release, err := c.encodeWhys(a.Release)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	return json.Marshal(assignmentValue{Epoch: a.Epoch, Shards: set, Free: free, AsOf: a.AsOf, Why: why, Release: release, Loads: a.Loads})
}

// encodeWhys groups shards by their Why, each group as index ranges,
// sorted by ranges so that equal maps encode equally.
func (c Config) encodeWhys(whys map[ID]Why) ([]whyValue, error) {
	if len(whys) == 0 {
		return nil, nil
	}
	byWhy := map[Why][]ID{}
	for id, w := range whys {
		byWhy[w] = append(byWhy[w], id)
	}
	out := make([]whyValue, 0, len(byWhy))
	for _, w := range slices.SortedFunc(maps.Keys(byWhy), func(a, b Why) int { return strings.Compare(a.String(), b.String()) }) {
		set, err := c.EncodeSet(byWhy[w])
		if err != nil {
			return nil, fmt.Errorf("reason %q: %w", w, err)
		}
		out = append(out, whyValue{Why: w, Shards: set})
	}
	slices.SortFunc(out, func(x, y whyValue) int { return strings.Compare(x.Shards, y.Shards) })
	return out, nil
}

// DecodeAssignment reads an assignment key's value written by
// EncodeAssignment for the same config; Shards is nil for an empty set.
// The error says what is wrong with the value; it never panics, whatever
// the value.
func (c Config) DecodeAssignment(value []byte) (Assignment, error) {
	var v assignmentValue
	if err := json.Unmarshal(value, &v); err != nil {
		return Assignment{}, fmt.Errorf("malformed assignment value (want JSON {epoch, shards, free, as_of, why, release, loads}): %w", err)
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
	why, err := c.decodeWhys("why", v.Why)
	if err != nil {
		return Assignment{}, err
	}
	release, err := c.decodeWhys("release", v.Release)
	if err != nil {
		return Assignment{}, err
	}
	return Assignment{Epoch: v.Epoch, Shards: ids, Free: free, AsOf: v.AsOf, Why: why, Release: release, Loads: v.Loads}, nil
}

func (c Config) decodeWhys(field string, vs []whyValue) (map[ID]Why, error) {
	var whys map[ID]Why
	for _, wv := range vs {
		ids, err := c.DecodeSet(wv.Shards)
		if err != nil {
			return nil, fmt.Errorf("assignment value's %s shards for %q: %w", field, wv.Why, err)
		}
		if whys == nil {
			whys = map[ID]Why{}
		}
		for _, id := range ids {
			whys[id] = wv.Why
		}
	}
	return whys, nil
}

// Clone returns a copy of a whose slices and maps the caller may change.
func (a Assignment) Clone() Assignment {
	a.Shards = slices.Clone(a.Shards)
	a.Free = slices.Clone(a.Free)
	a.Why = maps.Clone(a.Why)
	a.Release = maps.Clone(a.Release)
	a.Memory = slices.Clone(a.Memory)
	return a
}
