package shard

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Lock names one lock of a fleet: a key under the fleet's prefix that one
// session at a time holds. A shard's lock (ShardLock, P/shards/<shard>)
// makes its holder the shard's owner; a role's lock (RoleLock, P/<role>)
// makes its holder the one instance in that role: the fleet's assignor
// (AssignorLock), an election's leader. Every lock works the same way:
// taken by a session, released by it or freed when it ends (after the
// session's lock-delay), and its token is the coordinator index of the
// write that took it, so one lock's tokens strictly increase across
// holders, also after its key was deleted.
type Lock string

// shardLocks is the directory of the shard locks under a fleet's prefix.
const shardLocks = "shards/"

// ShardLock is shard id's lock, P/shards/<id>.
func ShardLock(id ID) Lock { return Lock(shardLocks + string(id)) }

// RoleLock is the lock of a role, P/<role>. A role is one path segment of
// lowercase letters, digits and '-', not a name the fleet's layout uses for
// something else (Lock.Validate).
func RoleLock(role string) Lock { return Lock(role) }

// AssignorLock is the fleet's assignor role, P/assignor: its holder lists
// the fleet and writes every worker's assignment, and its token is the
// assignor's epoch (Assignments.Assign checks it).
const AssignorLock Lock = "assignor"

// reservedRoles are the names of the fleet's other keys and directories
// (docs/design.md, "Keys"): a role by one of them would collide.
var reservedRoles = map[string]bool{"config": true, "freeze": true, "policy": true, "members": true,
	"shards": true, "assign": true, "loads": true, "offsets": true, "history": true,
	"standby": true, "sessions": true}

// Shard returns the shard whose lock l is, and false for a role's lock.
func (l Lock) Shard() (ID, bool) {
	id, ok := strings.CutPrefix(string(l), shardLocks)
	return ID(id), ok
}

// Validate says what is wrong with l as a lock name, or nil: a shard lock
// with an empty shard ID, or a role that is empty, is not one lowercase
// path segment, or is one of the fleet's reserved names. Whether a shard
// belongs to the fleet is the coordinator's to check (ErrUnknownShard).
func (l Lock) Validate() error {
	if id, ok := l.Shard(); ok {
		if id == "" {
			return fmt.Errorf("%w: lock %q names an empty shard id", ErrInvalidArgument, l)
		}
		return nil
	}
	role := string(l)
	valid := role != "" && !reservedRoles[role]
	for _, r := range role {
		valid = valid && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}
	if !valid {
		return fmt.Errorf("%w: lock %q is neither a shard's (shards/<id>) nor a role's (one segment of a-z, 0-9 and '-', not one of the fleet's own key names)", ErrInvalidArgument, l)
	}
	return nil
}

// Acquisition asks for one lock, with why recorded in its value.
type Acquisition struct {
	Lock Lock
	Why  Why
}

// AcquireShard asks for shard id's lock, with why recorded in its value.
func AcquireShard(id ID, why Why) Acquisition {
	return Acquisition{Lock: ShardLock(id), Why: why}
}

// ShardLocks returns the locks of shards ids, in order.
func ShardLocks(ids []ID) []Lock {
	locks := make([]Lock, len(ids))
	for i, id := range ids {
		locks[i] = ShardLock(id)
	}
	return locks
}

// Grant is a lock a session holds and its token: the coordinator index of
// the write that took it.
type Grant struct {
	Lock  Lock
	Token Token
}

// String is the grant as "stream/shard-007@42" for a shard's lock (as a
// Claim prints) and "assignor@42" for a role's.
func (g Grant) String() string {
	if id, ok := g.Lock.Shard(); ok {
		return fmt.Sprintf("%s@%d", id, g.Token)
	}
	return fmt.Sprintf("%s@%d", g.Lock, g.Token)
}

// Claims returns the grants of shard locks among grants as claims, in
// order.
func Claims(grants []Grant) []Claim {
	claims := make([]Claim, 0, len(grants))
	for _, g := range grants {
		if c, ok := g.Claim(); ok {
			claims = append(claims, c)
		}
	}
	return claims
}

// Claim is g as a claim on its shard, and false when g is a role's lock.
func (g Grant) Claim() (Claim, bool) {
	id, ok := g.Lock.Shard()
	return Claim{Shard: id, Token: g.Token}, ok
}

// TryLock takes one lock with session id, as Locks.Acquire does: it
// returns the lock's token and true when the session holds the lock
// afterwards (taken now, or held already), and 0 and false, without an
// error, when another session holds it or it is in its lock-delay.
func TryLock(ctx context.Context, l Locks, id SessionID, lock Lock) (Token, bool, error) {
	grants, err := l.Acquire(ctx, id, []Acquisition{{Lock: lock}})
	if err != nil {
		return 0, false, err
	}
	for _, g := range grants {
		if g.Lock == lock {
			return g.Token, true, nil
		}
	}
	return 0, false, nil
}

// Owner is the value of a lock's key: who took it, why, and when; and,
// once released voluntarily, why it was released. It holds no secrets.
type Owner struct {
	Worker string `json:"worker"`
	Why
	Since    time.Time `json:"since"`
	Released Reason    `json:"released,omitempty"`
	// Gen is the fleet's generation when the lock was taken (the stored
	// config's Generation, read in the same transaction): the high part
	// of the holder's token (see MakeToken). Omitted while 0.
	Gen uint32 `json:"gen,omitempty"`
}

// LockKey is one lock's key as Locks.Watch (and, for the assignor, a
// Snapshot) sees it.
type LockKey struct {
	// Index is the blocking-query index to wait on next (see NextIndex).
	// In a Snapshot it is the key's modify index, 0 when the key is
	// missing.
	Index uint64 `json:"index"`
	// Session holds the lock; empty while it is free (missing key,
	// released, or its session ended).
	Session SessionID `json:"session,omitempty"`
	// Token is the holder's token: the key's modify index, which is that
	// of the acquiring write as long as nothing else writes the key. 0
	// while free.
	Token Token `json:"token,omitempty"`
	// Owner is the key's value; its Worker is the holder while held.
	Owner
	// Problem is non-empty when the key's value cannot be read as an
	// Owner (overwritten by hand); it names the key. The lock is real all
	// the same.
	Problem string `json:"problem,omitempty"`
}

// Held reports whether a session holds the lock.
func (k LockKey) Held() bool { return k.Session != "" }
