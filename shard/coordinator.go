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
	// Zero is none here; a LeasePolicy's zero (the TTL) is translated by
	// LeasePolicy.SessionSpec.
	LockDelay time.Duration
}

// Member is a worker's registration, stored under P/members/<id> and held by
// the worker's session.
type Member struct {
	ID      string `json:"id"`
	Address string `json:"address,omitempty"`
	Version string `json:"version,omitempty"`
	// Protocol is the coordination protocol the worker speaks (its build's
	// shard.Protocol); 0 in a key written by release 0.1.0, which wrote
	// none and speaks protocol 3.
	Protocol int `json:"protocol,omitempty"`
	// Steps are the protocol steps the worker speaks beyond its protocol
	// (see Steps): nil in a key of release 0.1.0, which speaks none.
	Steps   []string  `json:"steps,omitempty"`
	Weight  int       `json:"weight"`
	Started time.Time `json:"started"`
	// Zone is the failure domain the worker runs in ("eu-west-1a"; see
	// ValidateZone): the assignor keeps each zone's share of shards in
	// proportion to its capacity (once every live member speaks
	// StepZones). Empty: none; members without one form a zone of their
	// own. Labels are the worker's other facts ("disk=ssd"; see
	// ValidateLabels), shown to operators. Both are the worker's to write,
	// from its configuration; a release before they existed ignores them.
	Zone   string            `json:"zone,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Draining asks the worker to hand off all of its shards (set by an
	// operator); the planner gives a draining member no capacity.
	Draining bool `json:"draining,omitempty"`
	// Cordon, set by an operator, says the worker keeps the shards it holds
	// and is given nothing new; nil when not cordoned. It is written like
	// Draining, with the worker's own session, and a worker that joins
	// again under the same ID keeps it.
	Cordon *Mark `json:"cordon,omitempty"`
	// RejoinUntil, written by a worker stopping with a rejoin grace just
	// before it releases its shards, says it will be back by then: the
	// assignor keeps its assignment (its shards, idle meanwhile) for it
	// until RejoinUntil instead of giving them away, and the coordinator
	// keeps its dead member key at least that long. Zero: none (a crash,
	// or a stop without grace). A worker clears it when it joins.
	RejoinUntil time.Time `json:"rejoin_until,omitzero"`
	// Load is the smoothed load of each shard the worker owns, as its
	// handlers report it (worker.Claim.ReportLoad) or as derived from their
	// commit rate, rounded to three significant digits. It is not part of
	// the member key: the worker writes it to a key of its own, P/loads/<id>
	// (Members.ReportLoad), so that a load report never rewrites the
	// member key and can never overwrite an operator's drain or cordon.
	// Snapshots fill it from that key while the member's live session
	// holds it; Join never writes it, and Members.Watch, which reads the
	// member key alone, does not fill it; a "load" field written into
	// a member key by hand is ignored. Nil: nothing measured yet, or the
	// worker is not asked for loads. A shard listed here that the worker no longer
	// holds is ignored: only the holder's figure counts.
	Load map[ID]float64 `json:"load,omitempty"`
	// Standby is the state of each standby the worker runs, as it
	// reports it to a key of its own, P/standby/<id>
	// (Members.ReportStandby), filled and ignored in a member key like
	// Load. StandbyCapable says the worker's handler has a standby side
	// (worker.Standby), written by the worker in its member key: only
	// such a worker is given standbys, and a move to it is warm.
	Standby        map[ID]StandbyState `json:"standby,omitempty"`
	StandbyCapable bool                `json:"standby_capable,omitempty"`
}

// Mark records who set an operator's state (a cordon, a freeze), when,
// and why, for status displays and logs.
type Mark struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Speaks is the protocol the member's worker speaks: Member.Protocol, or 3
// for a key of release 0.1.0, which named none.
func (m Member) Speaks() int {
	if m.Protocol == 0 {
		return 3
	}
	return m.Protocol
}

// Returning reports whether the member said, when it stopped, that it
// will be back, and now is still inside its rejoin grace.
func (m Member) Returning(now time.Time) bool { return now.Before(m.RejoinUntil) }

// MemberState is a member key as seen in a snapshot. Session is empty when
// the member's session is gone: the member is dead.
type MemberState struct {
	Member
	Session SessionID `json:"session,omitempty"`
}

// Live reports whether the member's key is held by a session.
func (m MemberState) Live() bool { return m.Session != "" }

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

// Snapshot is one consistent view of a fleet: its config, members, shard
// keys, assignor and assignment keys, at coordinator index Index. Members
// and Shards are sorted by ID. Shards lists only keys that exist; a shard
// never acquired has no key.
type Snapshot struct {
	Index   uint64        `json:"index"`
	Config  *Config       `json:"config,omitempty"`
	Members []MemberState `json:"members"`
	Shards  []ShardState  `json:"shards"`
	// Assignor is AssignorLock's key (Index: its modify index, 0 when
	// missing); its Token is the assignor's epoch.
	Assignor LockKey `json:"assignor"`
	// Assignments are the assignment keys that can be read, by worker.
	// Never nil in a snapshot a coordinator returned.
	Assignments map[string]Assignment `json:"assignments"`
	// Freeze is P/freeze (see Fleet.SetFreeze): nil when the fleet is
	// not frozen. A freeze key whose value cannot be read counts as a
	// freeze (with a zero Mark) and is listed in Problems.
	Freeze *Mark `json:"freeze,omitempty"`
	// Policy is P/policy (see Fleet.SetPolicy): nil when none is stored,
	// or when the stored value cannot be read or is not a valid policy
	// (then listed in Problems, and the assignor follows its own config).
	Policy *BalancePolicy `json:"policy,omitempty"`
	// Problems lists foreign or malformed keys found under the prefix; they
	// are ignored, never treated as owners or assignments.
	Problems []string `json:"problems,omitempty"`
}

// MemberKey is one member key as Members.Watch sees it.
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

// Coordinator is a fleet's coordination service, seen through one small
// interface per concern: sessions, locks, the member registry, the
// assignments, the fleet's own keys, and its ownership history. It mirrors the few Consul
// operations shardlease uses; shard/memory and shard/consul implement it,
// and Intercept wraps one to fail, delay or watch its calls.
//
// Every method of every part is safe for concurrent use, honours ctx, and
// wraps the package's sentinel errors. Each accessor returns the same
// part on every call.
type Coordinator interface {
	Sessions() Sessions
	Locks() Locks
	Members() Members
	Assignments() Assignments
	Fleet() Fleet
	History() History
}

// Shared is implemented by a Coordinator that processes share (shard/consul:
// workers on many machines meet in one Consul), as opposed to one that
// lives in a process (shard/memory). worker.New uses it to refuse an
// offsets store that only one process sees (offsets.Local) beside it.
type Shared interface {
	SharedBetweenProcesses() bool
}

// Sessions are the coordinator's sessions: one per worker (not per
// shard), whose liveness is the worker's, so that renewal costs the same
// whatever the worker owns.
type Sessions interface {
	// Create opens a session.
	Create(ctx context.Context, spec SessionSpec) (SessionID, error)
	// Renew resets the session's TTL. ErrSessionInvalid when the session
	// is gone: everything it held is released.
	Renew(ctx context.Context, id SessionID) error
	// Destroy ends a session and releases every key it holds at once. It
	// is an invalidation, as in Consul: the locks it still held stay
	// closed for the session's lock-delay (a worker stopping on purpose
	// releases them first). Destroying a missing session is not an error.
	Destroy(ctx context.Context, id SessionID) error
}

// Locks are the fleet's locks (see Lock): each shard's, and each role's.
type Locks interface {
	// Acquire tries to take each lock of want with the session, in as
	// few coordinator writes as the coordinator allows, and returns a
	// Grant for each lock the session holds afterwards, in the order
	// asked for (a lock asked for twice counts once, with its first
	// reason). Its value is an Owner naming the session's worker, the
	// reason and the time. A lock held by another session, or inside its
	// lock-delay, is left out of the result; that is not an error. Locks
	// the session already holds are returned with their current token,
	// without a write.
	//
	// When the work takes several writes and one fails, Acquire returns
	// the grants the earlier writes made together with the error: those
	// locks are held by the session, and dropping them would leave them
	// held by a worker that does not know it.
	//
	// Errors, before anything is written: a lock name that Lock.Validate
	// refuses wraps ErrInvalidArgument, a shard outside the fleet's
	// config ErrUnknownShard; a gone session wraps ErrSessionInvalid.
	Acquire(ctx context.Context, id SessionID, want []Acquisition) ([]Grant, error)
	// Release unlocks the locks the session holds among locks and records
	// why in their value (Owner.Released), keeping the rest of it. A
	// voluntary release sets no lock-delay: another session may take the
	// lock at once. Locks it does not hold are ignored; a gone session
	// wraps ErrSessionInvalid.
	Release(ctx context.Context, id SessionID, locks []Lock, why Reason) error
	// Watch returns the lock's key as soon as its index is greater than
	// after (at once when after is 0), or when the coordinator's blocking
	// wait ends; callers follow NextIndex. A candidate for a role waits
	// on it for the holder to go, and the holder for its own removal. The
	// end of a lock-delay is not a write and wakes nobody.
	Watch(ctx context.Context, lock Lock, after uint64) (LockKey, error)
}

// Members is the fleet's member registry: one key per worker,
// P/members/<id>, held by the worker's session, and its loads key.
type Members interface {
	// Join acquires the member key of m.ID with the session, or updates
	// it if the session already holds it. ErrMemberExists when another
	// live session holds it.
	Join(ctx context.Context, id SessionID, m Member) error
	// Watch returns worker id's member key as soon as the key's index is
	// greater than after (at once when after is 0), or when the
	// coordinator's blocking wait ends; callers follow NextIndex. It is
	// how a worker learns promptly that its session was ended by someone
	// else (the key loses its session) or that its registration was
	// deleted or overwritten, without listing the fleet.
	Watch(ctx context.Context, id string, after uint64) (MemberKey, error)
	// ReportLoad writes the loads of the shards worker runs to
	// P/loads/<worker>, a key of its own held by the session, so that the
	// worker's member key, where operators set drains and cordons, is not
	// rewritten: snapshots show the figures as the member's Load (see
	// Member.Load). The session must be the live holder of worker's member
	// key: a gone session wraps ErrSessionInvalid, any other session (or a
	// member key that is missing or dead) ErrNotMember, and nothing is
	// written. The key dies with the session (its figures stop counting)
	// and is deleted with the dead member key. A bad figure, an empty
	// worker or loads that would not fit in MaxLoadBytes wrap
	// ErrInvalidArgument, a shard outside the fleet's config
	// ErrUnknownShard, all before anything is written. It does not modify
	// load.
	ReportLoad(ctx context.Context, id SessionID, worker string, load map[ID]float64) error
	// ReportStandby writes the state of the standbys worker runs to
	// P/standby/<worker>, with ReportLoad's checks, errors, bound and
	// life, as index sets of the fleet's config (so a fleet not
	// configured yet wraps ErrInvalidArgument); snapshots show it as the
	// member's Standby. A report of nothing deletes the key. An Applied
	// below -1 wraps ErrInvalidArgument.
	ReportStandby(ctx context.Context, id SessionID, worker string, states map[ID]StandbyState) error
}

// Assignments are the assignor's word to each worker, P/assign/<worker>.
type Assignments interface {
	// Assign writes the assignment keys of set, P/assign/<worker> for each
	// worker (nil: the key is deleted), each value's Epoch set to epoch.
	// It takes as few coordinator transactions as the coordinator's cap
	// allows (Consul: 128 operations per /v1/txn), workers in sorted
	// order, and EACH transaction first checks that the session still
	// holds AssignorLock at exactly epoch: a paused or deposed assignor's
	// writes are refused by the coordinator itself. When a check fails,
	// nothing of that transaction is written and the error wraps
	// ErrNotAssignor; transactions before it stay written (the error says
	// how many keys), so the next assignor must not trust assignment keys
	// and rebuilds from ownership. A session that is gone holds nothing:
	// that too is ErrNotAssignor.
	//
	// Before anything is written: an empty worker wraps
	// ErrInvalidArgument, a shard outside the fleet's config wraps
	// ErrUnknownShard, and an unconfigured fleet ErrInvalidArgument. An
	// empty set writes and checks nothing. Assign does not modify set.
	Assign(ctx context.Context, id SessionID, epoch Token, set map[string]*Assignment) error
	// Watch returns worker's assignment key as soon as its index is
	// greater than after (at once when after is 0), or when the
	// coordinator's blocking wait ends; callers follow NextIndex. It reads
	// one key, so a worker follows its own assignment without listing the
	// fleet, and writes of other workers' keys do not wake it while its
	// key exists. (While the key is missing, Consul answers with an index
	// of the whole store, so other writes may wake it; see shard/consul.)
	// A value that cannot be read is returned with Exists set and Problem
	// saying why. An empty worker wraps ErrInvalidArgument.
	Watch(ctx context.Context, worker string, after uint64) (AssignmentKey, error)
}

// Fleet is the fleet's own keys and its whole view.
type Fleet interface {
	// Configure stores cfg as the fleet's config if none is stored yet,
	// and returns the stored config. If a different config is stored it
	// returns it with an error wrapping ErrConfigMismatch.
	Configure(ctx context.Context, cfg Config) (Config, error)
	// SetFreeze writes the fleet-wide freeze, P/freeze, as a plain write
	// held by no session (it outlives the assignor and whoever set it),
	// or deletes it when mark is nil; deleting a missing freeze is not an
	// error. While it exists the assignor starts no hand-off between live
	// workers and only places shards that no live worker holds. Snapshots
	// carry it in Freeze. A mark with an empty By wraps
	// ErrInvalidArgument.
	SetFreeze(ctx context.Context, mark *Mark) error
	// SetPolicy writes the fleet's balancing policy, P/policy, as a plain
	// write held by no session, and returns the policy stored afterwards.
	// With ifNone it writes only when no policy is stored (how a worker
	// proposes its configured policy to a new fleet) and otherwise returns
	// the stored one unchanged. Snapshots carry it in Policy. A policy
	// that Validate refuses wraps ErrInvalidArgument and writes nothing; a
	// stored value that cannot be read is returned as an error wrapping
	// ErrInvalidArgument when ifNone (it is overwritten otherwise).
	SetPolicy(ctx context.Context, p BalancePolicy, ifNone bool) (BalancePolicy, error)
	// RaiseGeneration rewrites the stored config with Generation gen, so
	// that every lock taken afterwards carries a token above every token
	// of an earlier generation (see MakeToken), and returns the stored
	// config afterwards. It is how a fleet recovers after its coordinator
	// lost its history; an operator decides it (`shardctl recover`),
	// never a worker. The write is a check-and-set on the config read: a
	// concurrent rewrite makes it read and check again. A gen that is not
	// above the stored generation or above MaxGeneration, or a fleet with
	// no stored config, wraps ErrInvalidArgument and writes nothing.
	RaiseGeneration(ctx context.Context, gen uint32) (Config, error)
	// SetLayouts rewrites the stored config's reshards (Config.Layouts)
	// from from, the layouts the change was decided from, to to, with a
	// check-and-set on the config (NextLayouts says what is refused), and
	// returns the stored config afterwards. It is how a reshard starts,
	// opens children, ends and is cancelled (admin.Reshard, the
	// assignor); a rewrite moves the config's index, so a lock decided
	// under the old config is refused and decided again. Stored layouts
	// other than from wrap ErrConfigChanged; a fleet with no stored
	// config wraps ErrInvalidArgument; nothing is written either way.
	SetLayouts(ctx context.Context, from, to []Layout) (Config, error)
	// Watch returns the fleet's snapshot as soon as its index is greater
	// than after (at once when after is 0). It blocks until then or until
	// ctx ends. Callers follow the blocking-query rules of NextIndex.
	//
	// A snapshot lists the whole prefix, assignment keys included; a
	// worker does not need it (only the assignor, dashboards and
	// operators' tools list the fleet).
	Watch(ctx context.Context, after uint64) (Snapshot, error)
}
