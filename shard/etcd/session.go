package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/shard"
)

// A session is an etcd lease and a key attached to it, P/sessions/<id>,
// whose ID is the lease's in hexadecimal. The key is the session as
// others see it: keys naming the session are held while it exists, and
// transactions compare its existence. The lease is its life: renewing is
// one keep-alive of the lease, and when the lease ends (expired, revoked
// by Destroy or by anyone with etcdctl) etcd deletes the key in the same
// step. A session key deleted by hand while its lease lives is treated as
// the session's end: whoever finds it so revokes the lease (deadSince).

// MaxLockDelay bounds a session's lock-delay, as Consul's does (60 s): a
// longer one is a mistake more often than a choice.
const MaxLockDelay = time.Minute

// sessionInfo is the value of a session key.
type sessionInfo struct {
	Worker      string `json:"worker"`
	TTLMS       int64  `json:"ttl_ms"`
	LockDelayMS int64  `json:"lock_delay_ms"`
}

func (s sessionInfo) lockDelay() time.Duration {
	return time.Duration(s.LockDelayMS) * time.Millisecond
}

// sessionKey is session id's key.
func (c *Coordinator) sessionKey(id shard.SessionID) string {
	return c.keys.Dir() + "sessions/" + string(id)
}

// leaseOf is the lease of session id; false when id cannot be one.
func leaseOf(id shard.SessionID) (clientv3.LeaseID, bool) {
	if len(id) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(id), 16, 64)
	if err != nil || n == 0 || n > math.MaxInt64 {
		return 0, false
	}
	return clientv3.LeaseID(n), true
}

func sessionOf(lease clientv3.LeaseID) shard.SessionID {
	return shard.SessionID(fmt.Sprintf("%016x", uint64(lease)))
}

// ValidateSession reports what is wrong with spec for an etcd session,
// wrapping shard.ErrInvalidArgument.
func ValidateSession(spec shard.SessionSpec) error {
	var problems []string
	if spec.Worker == "" {
		problems = append(problems, "worker is empty")
	}
	if spec.TTL <= 0 {
		problems = append(problems, fmt.Sprintf("ttl %v must be positive", spec.TTL))
	}
	if spec.LockDelay < 0 {
		problems = append(problems, fmt.Sprintf("lock-delay %v must not be negative", spec.LockDelay))
	} else if spec.LockDelay > MaxLockDelay {
		problems = append(problems, fmt.Sprintf("lock-delay %v exceeds the maximum %v", spec.LockDelay, MaxLockDelay))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: session spec: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// leaseSeconds is the lease TTL of a session TTL: etcd counts whole
// seconds, so it is rounded up (a lease that outlives the worker's own
// deadline only delays the next owner). etcd raises a TTL below its
// minimum (1.5 × its election timeout, rounded up: 2 s by default) to it.
func leaseSeconds(ttl time.Duration) int64 {
	return int64(math.Ceil(ttl.Seconds()))
}

// LeaseTTL is the TTL of the lease behind a session asked for with TTL
// ttl: ttl rounded up to whole seconds (etcd may raise it further to its
// own minimum). A crashed worker's shards are free once this has passed
// since its last renewal, and its lock-delay after that.
func LeaseTTL(ttl time.Duration) time.Duration { return time.Duration(leaseSeconds(ttl)) * time.Second }

// Create grants a lease of the spec's TTL and writes the session key
// attached to it; the key is written only if the lease is still alive,
// and a key that cannot be written revokes the lease.
func (ss sessions) Create(ctx context.Context, spec shard.SessionSpec) (shard.SessionID, error) {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return "", err
	}
	if err := ValidateSession(spec); err != nil {
		return "", err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	grant, err := c.cli.Grant(octx, leaseSeconds(spec.TTL))
	if err != nil {
		return "", c.fail(octx, "create session", err)
	}
	id := sessionOf(grant.ID)
	value, _ := json.Marshal(sessionInfo{Worker: spec.Worker, TTLMS: spec.TTL.Milliseconds(), LockDelayMS: spec.LockDelay.Milliseconds()})
	_, err = c.cli.Put(octx, c.sessionKey(id), string(value), clientv3.WithLease(grant.ID))
	if err != nil {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RequestTimeout)
		_, _ = c.cli.Revoke(rctx, grant.ID)
		rcancel()
		return "", c.fail(octx, "create session (write its key)", err)
	}
	return id, nil
}

// Renew is one keep-alive of the session's lease.
func (ss sessions) Renew(ctx context.Context, id shard.SessionID) error {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	lease, ok := leaseOf(id)
	if !ok {
		return sessionGone(id, "is not an etcd session id")
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	_, err := c.cli.KeepAliveOnce(octx, lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return sessionGone(id, "does not exist (expired, revoked or never created)")
	}
	return c.fail(octx, "renew session", err)
}

// Destroy revokes the session's lease: etcd deletes its key, and every
// lock it still names stays closed for its lock-delay (Acquire). A
// missing session is not an error.
func (ss sessions) Destroy(ctx context.Context, id shard.SessionID) error {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	lease, ok := leaseOf(id)
	if !ok {
		return nil
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	_, err := c.cli.Revoke(octx, lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		err = nil
	}
	if err == nil {
		c.noteDead(id)
	}
	return c.fail(octx, "destroy session", err)
}

// sessionGone is the error for a session etcd no longer has.
func sessionGone(id shard.SessionID, why string) error {
	return fmt.Errorf("%w: session %q %s", shard.ErrSessionInvalid, id, why)
}

// deadKept is how long a session's end is remembered. A lock still naming
// a session forgotten since counts a lock-delay again from when it is
// found: late, never early.
const deadKept = time.Hour

// forgetDead drops what this coordinator knew of session id's end: its
// key was found again (an etcd restored from a snapshot brings back
// leases and their keys), and a later end must count its lock-delay anew.
func (c *Coordinator) forgetDead(id shard.SessionID) {
	c.mu.Lock()
	delete(c.dead, id)
	c.mu.Unlock()
}

// noteDead records that session id has ended, now unless known earlier.
func (c *Coordinator) noteDead(id shard.SessionID) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.dead[id]; ok {
		return t
	}
	t := now()
	for s, at := range c.dead {
		if t.Sub(at) > deadKept {
			delete(c.dead, s)
		}
	}
	c.dead[id] = t
	return t
}

// deadSince returns when this coordinator first knew that session id,
// whose key is missing, had ended; it asks etcd about the lease when it
// did not know. A lease that is still alive lost its key by hand: it is
// revoked, and counts as ended now. A session's end is for good (a lease
// ID is never granted again), so it is asked once.
func (c *Coordinator) deadSince(ctx context.Context, id shard.SessionID) (time.Time, error) {
	c.mu.Lock()
	t, ok := c.dead[id]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	lease, valid := leaseOf(id)
	if valid {
		ttl, err := c.cli.TimeToLive(ctx, lease)
		if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return time.Time{}, c.fail(ctx, "look up a session", err)
		}
		// -1: gone. Any other answer is a live lease, even 0 (etcd rounds
		// what is left down to whole seconds): it is ended here, so that
		// its holder's next renewal is refused before anyone counts a
		// lock-delay.
		if err == nil && ttl.TTL != -1 {
			if _, err := c.cli.Revoke(ctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return time.Time{}, c.fail(ctx, "end a session whose key was deleted", err)
			}
		}
	}
	return c.noteDead(id), nil
}
