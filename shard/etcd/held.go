package etcd

import (
	"encoding/json"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// etcd has no keys held by a session: a key attached to a lease is
// deleted when the lease ends, and a lock's key must outlive its holder
// (its token history, the lock-delay it opens, the owner it names). So a
// key that a session holds — a lock, a member key, a report key — is
// stored as an envelope naming the session beside the value, and it is
// held while that session's key, P/sessions/<id>, exists (session.go).

// envelope is the stored form of a key a session may hold.
type envelope struct {
	// Session holds the key; empty when it is free (released).
	Session shard.SessionID `json:"session,omitempty"`
	// LockDelayMS is the holder's lock-delay, in milliseconds: a lock
	// whose holder's session ended stays closed that long after the end
	// was first seen.
	LockDelayMS int64 `json:"lock_delay_ms,omitempty"`
	// Value is the key's value as every engine stores it (a shard.Owner,
	// a shard.Member, a report).
	Value json.RawMessage `json:"value"`
}

// unreadableHolder is the holder shown for a lock whose stored form cannot
// be read (written by hand): it is taken by nobody until an operator
// deletes the key, as a lock held by an unknown session would be. A
// member or report key in that state is held by nobody (dead): it gives
// no ownership, and its worker writes it again when it joins.
const unreadableHolder shard.SessionID = "(unreadable)"

// unreadableAs is the holder of an unreadable held key rel (below P/).
func unreadableAs(rel string) shard.SessionID {
	if isLockKey(rel) {
		return unreadableHolder
	}
	return ""
}

// isLockKey reports whether rel (below P/) is a lock's key: a shard's or a
// role's.
func isLockKey(rel string) bool {
	return strings.HasPrefix(rel, "shards/") || !strings.Contains(rel, "/") && shard.Lock(rel).Validate() == nil
}

// wrap is the stored form of value held by session (empty: free).
func wrap(session shard.SessionID, lockDelay time.Duration, value []byte) string {
	b, _ := json.Marshal(envelope{Session: session, LockDelayMS: lockDelay.Milliseconds(), Value: value}) // an envelope of JSON always marshals
	return string(b)
}

// unwrap reads a stored envelope; ok is false when it is not one.
func unwrap(stored []byte) (envelope, bool) {
	var e envelope
	if err := json.Unmarshal(stored, &e); err != nil || e.Value == nil {
		return envelope{}, false
	}
	return e, true
}

// lockDelay is the holder's lock-delay an envelope records.
func (e envelope) lockDelay() time.Duration { return time.Duration(e.LockDelayMS) * time.Millisecond }

// isHeldKind reports whether the fleet's key rel (below P/) is one a
// session may hold, stored as an envelope: locks (shards' and roles'),
// member keys and report keys.
func isHeldKind(rel string) bool {
	for _, dir := range []string{"shards/", "members/", "loads/", "standby/"} {
		if strings.HasPrefix(rel, dir) {
			return true
		}
	}
	return shard.Lock(rel).Validate() == nil // a role's lock, P/<role>
}

// pairOf is a stored key as the fleet's keys see it: an envelope's value
// and its holder while live says so (live: whether a session's key
// exists), a plain key's value as is; nil for nil. A held key whose
// envelope cannot be read keeps its stored bytes as the value (a
// problem, for fleetkeys) and unreadableAs's holder.
func (c *Coordinator) pairOf(kv *mvccpb.KeyValue, live func(shard.SessionID) bool) *fleetkeys.Pair {
	if kv == nil {
		return nil
	}
	p := &fleetkeys.Pair{Key: string(kv.Key), Value: kv.Value, Index: uint64(kv.ModRevision)}
	rel := strings.TrimPrefix(p.Key, c.keys.Dir())
	if !isHeldKind(rel) {
		return p
	}
	e, ok := unwrap(kv.Value)
	if !ok {
		p.Session = unreadableAs(rel)
		return p
	}
	p.Value = e.Value
	if e.Session != "" && live(e.Session) {
		p.Session = e.Session
	}
	return p
}
