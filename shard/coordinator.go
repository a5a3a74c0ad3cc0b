package shard

import (
	"context"
	"time"
)

// SessionID identifies one worker session on the coordinator. A worker holds
// one session, whatever the number of shards it owns, so renewal cost does not
// grow with ownership.
type SessionID string

// SessionSpec describes a session to create.
type SessionSpec struct {
	// Worker is the worker ID the session belongs to (for operators; the
	// coordinator does not enforce uniqueness here, Join does).
	Worker string
	// TTL: the session is invalidated when it has not been renewed for TTL.
	// (Consul may take up to 2·TTL; the embedded coordinator takes exactly TTL.)
	TTL time.Duration
	// LockDelay: after the session is invalidated (not after a voluntary
	// release), the locks it held cannot be acquired again for this long.
	LockDelay time.Duration
}

// Member is a worker's registration, stored under P/members/<id> and held by
// the worker's session.
type Member struct {
	ID      string    `json:"id"`
	Address string    `json:"address,omitempty"`
	Version string    `json:"version,omitempty"`
	Weight  int       `json:"weight"`
	Started time.Time `json:"started"`
	// Draining asks the worker to hand off all of its shards (set by an
	// operator); the planner gives a draining member no capacity.
	Draining bool `json:"draining,omitempty"`
}

// MemberState is a member key as seen in a snapshot. Session is empty when
// the member's session is gone: the member is dead.
type MemberState struct {
	Member
	Session SessionID `json:"session,omitempty"`
}

// Live reports whether the member's key is held by a session.
func (m MemberState) Live() bool { return m.Session != "" }

// Owner is the value of a shard lock key: who acquired it, why, and when; and,
// once released voluntarily, why it was released. It holds no secrets.
type Owner struct {
	Worker   string    `json:"worker"`
	Reason   string    `json:"reason,omitempty"`
	Since    time.Time `json:"since"`
	Released string    `json:"released,omitempty"`
}

// ShardState is a shard lock key as seen in a snapshot. Session is empty when
// the shard is free. Token is the key's current modify index: while the key is
// held, the fencing token of its owner's claim.
type ShardState struct {
	Shard   ID        `json:"shard"`
	Session SessionID `json:"session,omitempty"`
	Token   Token     `json:"token"`
	Owner   Owner     `json:"owner"`
}

// Held reports whether a session holds the shard.
func (s ShardState) Held() bool { return s.Session != "" }

// Snapshot is one consistent view of a fleet: its config, members and shard
// keys, at coordinator index Index. Members and Shards are sorted by ID.
// Shards lists only keys that exist; a shard never acquired has no key.
type Snapshot struct {
	Index   uint64        `json:"index"`
	Config  *Config       `json:"config,omitempty"`
	Members []MemberState `json:"members"`
	Shards  []ShardState  `json:"shards"`
	// Problems lists foreign or malformed keys found under the prefix; they
	// are ignored, never treated as owners.
	Problems []string `json:"problems,omitempty"`
}

// MemberKey is one member key as WatchMember sees it.
type MemberKey struct {
	// Index is the blocking-query index to wait on next (see NextIndex).
	Index uint64
	// Exists is false when the key is missing (deleted, or never written).
	Exists bool
	// Member is the key's value and the session holding it (empty when
	// none does). Valid only when Exists and Problem is empty.
	Member MemberState
	// Problem is non-empty when the key exists but its value cannot be
	// read as a Member (overwritten by hand): it says what is wrong.
	Problem string
}

// Acquisition asks for one shard lock, with the reason recorded in its value.
type Acquisition struct {
	Shard  ID
	Reason string
}

// Coordinator is the seam between shardlease and its lock service. It mirrors
// the few Consul operations shardlease uses. All methods are safe for
// concurrent use, honour ctx, and wrap the package's sentinel errors.
type Coordinator interface {
	// Configure stores cfg as the fleet's config if none is stored yet, and
	// returns the stored config. If a different config is stored it returns
	// it with an error wrapping ErrConfigMismatch.
	Configure(ctx context.Context, cfg Config) (Config, error)

	// CreateSession opens a session.
	CreateSession(ctx context.Context, spec SessionSpec) (SessionID, error)
	// RenewSession resets the session's TTL. ErrSessionInvalid when the
	// session is gone: everything it held is released.
	RenewSession(ctx context.Context, id SessionID) error
	// DestroySession ends a session and releases every key it holds at once.
	// It is an invalidation, as in Consul: the shards it still held stay
	// locked for the session's lock-delay (a worker stopping on purpose
	// releases them first). Destroying a missing session is not an error.
	DestroySession(ctx context.Context, id SessionID) error

	// Join acquires the member key of m.ID with the session, or updates it
	// if the session already holds it. ErrMemberExists when another live
	// session holds it.
	Join(ctx context.Context, id SessionID, m Member) error

	// Acquire tries to lock each shard with the session, in as few
	// coordinator writes as the coordinator allows, and returns a Claim for
	// each shard it locked. A shard held by another session, or inside its
	// lock-delay, is left out of the result; that is not an error. Shards the
	// session already holds are returned with their current token.
	//
	// When the work takes several writes and one fails, Acquire returns the
	// claims the earlier writes granted together with the error: those
	// shards are locked by the session, and dropping them would leave them
	// held by a worker that does not run them until its next look.
	Acquire(ctx context.Context, id SessionID, want []Acquisition) ([]Claim, error)
	// Release unlocks the shards the session holds among shards and records
	// why in their value. Shards it does not hold are ignored.
	Release(ctx context.Context, id SessionID, shards []ID, why string) error

	// WatchMember returns worker id's member key as soon as the key's index
	// is greater than after (at once when after is 0), or when the
	// coordinator's blocking wait ends; callers follow NextIndex. It is how a
	// worker learns promptly that its session was ended by someone else
	// (the key loses its session) or that its registration was deleted or
	// overwritten, without listing the fleet.
	WatchMember(ctx context.Context, id string, after uint64) (MemberKey, error)

	// Watch returns the fleet's snapshot as soon as its index is greater
	// than after (at once when after is 0). It blocks until then or until
	// ctx ends. Callers follow the blocking-query rules of NextIndex.
	Watch(ctx context.Context, after uint64) (Snapshot, error)
}

// NextIndex applies Consul's blocking-query rules to the index a watch
// returned: an index that went backwards means the coordinator's state was
// reset, so the next watch must start over from 0; an index of 0 is never
// waited on (it would return at once forever), so it becomes 1. Otherwise the
// returned index is the next one to wait on; an unchanged index means nothing
// changed (a timeout) and the caller simply waits again.
func NextIndex(prev, got uint64) uint64 {
	switch {
	case got < prev:
		return 0
	case got == 0:
		return 1
	default:
		return got
	}
}
