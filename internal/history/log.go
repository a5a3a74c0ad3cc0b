package history

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Keep is how many changes a Log keeps: the last thousand, a few hundred
// bytes each, so a log fits in one coordinator key.
const Keep = 1000

// Version is the format of a Log this build writes and reads.
const Version = 1

// Log is the ownership history kept in P/history: the last changes the
// assignors recorded, oldest first.
type Log struct {
	V int `json:"v"`
	// AsOf is the index of the last listing the log accounts for: every
	// acquisition with a token at most AsOf that is not in Changes was
	// either superseded within one listing or dropped as older than
	// Keep changes.
	AsOf uint64 `json:"as_of"`
	// AsOfAt is when that listing was taken (the assignor's clock): what
	// a new assignor finds changed was still as the log says then.
	AsOfAt  time.Time `json:"as_of_at,omitzero"`
	Changes []Change  `json:"changes"`
}

// Decode reads a stored log; an empty value is an empty log. A value of
// another format (a newer release's, an edit) is an error saying so.
func Decode(value []byte) (Log, error) {
	if len(value) == 0 {
		return Log{V: Version}, nil
	}
	var l Log
	if err := json.Unmarshal(value, &l); err != nil {
		return Log{}, fmt.Errorf("history: P/history is not an ownership log: %w", err)
	}
	if l.V != Version {
		return Log{}, fmt.Errorf("history: P/history is format %d, this build reads %d (written by another release)", l.V, Version)
	}
	return l, nil
}

// Append adds changes at the end and drops the oldest beyond Keep.
func (l *Log) Append(cs []Change) {
	l.Changes = append(l.Changes, cs...)
	if over := len(l.Changes) - Keep; over > 0 {
		l.Changes = append([]Change(nil), l.Changes[over:]...)
	}
}

// Encode is the log as stored, without its oldest changes if it would
// not fit in shard.MaxHistoryBytes (long worker or shard names).
func (l Log) Encode() ([]byte, error) {
	l.V = Version
	for {
		value, err := json.Marshal(l)
		if err != nil {
			return nil, fmt.Errorf("history: encode: %w", err)
		}
		if len(value) <= shard.MaxHistoryBytes || len(l.Changes) == 0 {
			return value, nil
		}
		l.Changes = l.Changes[max(1, len(l.Changes)/10):]
	}
}

// Of returns the changes of one shard, oldest first.
func (l Log) Of(id shard.ID) []Change {
	var out []Change
	for _, c := range l.Changes {
		if c.Shard == id {
			out = append(out, c)
		}
	}
	return out
}

// state is the fleet's ownership as the log last recorded it: a
// snapshot in which each shard whose last change is an acquisition is
// held by that worker at that token, for Changes to compare a listing
// with. The sessions are placeholders: only a token tells tenures apart
// across assignors.
func (l Log) state() shard.Snapshot {
	last := map[shard.ID]Change{}
	for _, c := range l.Changes {
		last[c.Shard] = c
	}
	s := shard.Snapshot{Index: l.AsOf}
	for id, c := range last {
		if c.Kind == Acquired {
			s.Shards = append(s.Shards, shard.ShardState{Shard: id, Session: recorded, Token: c.Token,
				Owner: shard.Owner{Worker: c.Worker, Since: c.Since}})
		}
	}
	return s
}

// recorded is the session of the shards in a log's state.
const recorded shard.SessionID = "(recorded)"
