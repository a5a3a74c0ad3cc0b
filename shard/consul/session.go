package consul

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/shard"
)

// sessionInfo is what a call needs to know about a session.
type sessionInfo struct {
	worker string // the session's Name: the values of its locks name it
	check  string // LivenessCheck: the TTL check it is bound to; else ""
}

// serfHealth is the agent's own liveness check, which every session is
// bound to as well: a session must not outlive its agent's node.
const serfHealth = "serfHealth"

// Create opens a Behavior=release session named after the worker,
// with the spec's lock-delay, and the configured liveness:
//
//   - LivenessCheck: a service instance of ServiceName with a TTL check
//     (TTL = spec.TTL, passing) is registered on the agent first, and the
//     session is bound to that check and to serfHealth. Critical checks of
//     earlier sessions that no session uses any more (a crashed worker's)
//     are deregistered on the way.
//   - LivenessTTL: a session TTL of spec.TTL, which Consul bounds to
//     MinSessionTTL..MaxSessionTTL.
//
// A bad spec wraps shard.ErrInvalidArgument and names every wrong value.
// Creating a session writes no key, so a fleet's watch index does not move.
func (ss sessions) Create(ctx context.Context, spec shard.SessionSpec) (shard.SessionID, error) {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return "", err
	}
	if err := c.validateSpec(spec); err != nil {
		return "", err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()

	body := map[string]any{
		"Name":      spec.Worker,
		"Behavior":  api.SessionBehaviorRelease,
		"LockDelay": lockDelayString(spec.LockDelay),
	}
	info := sessionInfo{worker: spec.Worker}
	if c.cfg.Liveness == LivenessTTL {
		body["TTL"] = spec.TTL.String()
		body["NodeChecks"] = []string{serfHealth}
	} else {
		check, err := c.registerCheck(octx, spec)
		if err != nil {
			return "", err
		}
		info.check = check
		// NodeChecks, not the deprecated Checks: 1.14 merges both, and an
		// explicit NodeChecks keeps the default [serfHealth] in Checks from
		// being counted twice. The worker's check is a service check.
		body["NodeChecks"] = []string{serfHealth}
		body["ServiceChecks"] = []api.ServiceCheck{{ID: check}}
	}

	id, err := c.createSession(octx, body)
	if err != nil {
		if info.check != "" {
			c.deregisterCheck(context.WithoutCancel(ctx), info.check)
		}
		return "", err
	}
	c.mu.Lock()
	c.sessions[id] = info
	c.mu.Unlock()
	return id, nil
}

func (c *Coordinator) validateSpec(spec shard.SessionSpec) error { return c.cfg.ValidateSession(spec) }

// ValidateSession reports every reason Consul, with this Config's liveness,
// would refuse a session of spec (a TTL out of Consul's range in TTL mode,
// a lock-delay above MaxLockDelay), wrapping shard.ErrInvalidArgument. A
// program can check its lease policy with it before it joins a fleet:
// c.ValidateSession(policy.SessionSpec(id)).
func (c Config) ValidateSession(spec shard.SessionSpec) error {
	c = c.withDefaults()
	var problems []string
	if spec.Worker == "" {
		problems = append(problems, "worker is empty")
	}
	if spec.TTL <= 0 {
		problems = append(problems, fmt.Sprintf("ttl %v must be positive", spec.TTL))
	} else if c.Liveness == LivenessTTL && (spec.TTL < MinSessionTTL || spec.TTL > MaxSessionTTL) {
		problems = append(problems, fmt.Sprintf("ttl %v is outside Consul's session TTL range %v..%v (liveness %q; use %q for shorter TTLs)",
			spec.TTL, MinSessionTTL, MaxSessionTTL, LivenessTTL, LivenessCheck))
	}
	if spec.LockDelay < 0 {
		problems = append(problems, fmt.Sprintf("lock-delay %v must not be negative", spec.LockDelay))
	} else if spec.LockDelay > MaxLockDelay {
		problems = append(problems, fmt.Sprintf("lock-delay %v exceeds Consul's maximum %v", spec.LockDelay, MaxLockDelay))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: session spec: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// lockDelayString spells a lock-delay so Consul reads it as meant: Consul
// takes values below 1000 (ns) as seconds, so anything under a millisecond
// but above zero is rounded up to one millisecond. Zero must be sent
// explicitly: an omitted LockDelay means Consul's default of 15 s, which is
// why sessions are created with Raw and not Session().Create.
func lockDelayString(d time.Duration) string {
	if d > 0 && d < time.Millisecond {
		d = time.Millisecond
	}
	return d.Round(time.Millisecond).String()
}

// createSession sends the create request. A check registered a moment ago
// is normally in the catalog already (registration syncs), but a busy
// agent may lag: "Missing check" is retried briefly.
func (c *Coordinator) createSession(ctx context.Context, body map[string]any) (shard.SessionID, error) {
	wait := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		var out struct{ ID string }
		_, err := c.client.Raw().Write("/v1/session/create", body, &out, (&api.WriteOptions{}).WithContext(ctx))
		if err == nil {
			return shard.SessionID(out.ID), nil
		}
		var se api.StatusError
		if attempt < 5 && errors.As(err, &se) && strings.Contains(se.Body, "Missing check") {
			select {
			case <-time.After(wait):
				wait *= 2
				continue
			case <-ctx.Done():
			}
		}
		return "", c.fail(ctx, "create session", err)
	}
}

// Renew proves the session's holder alive. LivenessTTL: a session
// renew (404: gone). LivenessCheck: a pass of the session's check, then a
// read of the session, because a check that went critical has already
// invalidated the session and passing it again would not bring it back;
// an unknown check or a missing session is shard.ErrSessionInvalid, and the
// orphaned check is deregistered.
func (ss sessions) Renew(ctx context.Context, id shard.SessionID) error {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	info, err := c.lookup(octx, id)
	if err != nil {
		return err
	}
	if info.check == "" {
		var out []*api.SessionEntry
		_, err := c.client.Raw().Write("/v1/session/renew/"+string(id), nil, &out, (&api.WriteOptions{}).WithContext(octx))
		var se api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			c.forget(id)
			return sessionGone(id, "does not exist (expired, destroyed or never created)")
		}
		return c.fail(octx, "renew session", err)
	}

	err = c.client.Agent().UpdateTTLOpts(info.check, "", api.HealthPassing, (&api.QueryOptions{}).WithContext(octx))
	var se api.StatusError
	if errors.As(err, &se) && (se.Code == http.StatusNotFound || strings.Contains(se.Body, "does not have associated TTL")) {
		c.forget(id)
		return sessionGone(id, fmt.Sprintf("lost its health check %q on agent %s (deregistered, or the agent restarted)", info.check, c.cfg.Address))
	}
	if err != nil {
		return c.fail(octx, "renew session (check pass)", err)
	}
	entry, _, err := c.client.Session().Info(string(id), (&api.QueryOptions{}).WithContext(octx))
	if err != nil {
		return c.fail(octx, "renew session (session read)", err)
	}
	if entry == nil {
		c.forget(id)
		c.deregisterCheck(context.WithoutCancel(ctx), info.check)
		return sessionGone(id, fmt.Sprintf("was invalidated (its health check %q went critical, or it was destroyed)", info.check))
	}
	return nil
}

// Destroy ends the session. Consul treats a destroy as an
// invalidation: the shard keys the session still holds are released and
// stay closed to every session for its lock-delay. That is wanted: a
// destroy may come from someone other than the session's worker (an
// operator, a script), who cannot know whether that worker is still acting
// on its shards, and shard.LeasePolicy's no-overlap rule counts on the
// delay. A worker that stops on purpose releases its shards first (Release
// sets no lock-delay). Its member keys, and their workers' report keys, are
// unlocked first, values kept, so that a worker restarting under its ID
// joins (and reports its loads) at once, as on the embedded
// coordinator, which never puts member keys in lock-delay. Then its service
// instance and check are deregistered. A missing session is not an error.
func (ss sessions) Destroy(ctx context.Context, id shard.SessionID) error {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	info, err := c.lookup(octx, id)
	if errors.Is(err, shard.ErrSessionInvalid) {
		return nil
	}
	if err != nil {
		return err
	}
	pairs, _, err := c.kv.List(octx, c.prefix+"members/", consulkv.Query{})
	if err != nil {
		return c.fail(octx, "destroy session (list member keys)", err)
	}
	var held []*api.KVPair
	var reports []string
	for _, p := range pairs {
		if p.Session == string(id) {
			held = append(held, p)
			reports = append(reports, c.keys.Reports(strings.TrimPrefix(p.Key, c.prefix+"members/"))...)
		}
	}
	current, err := c.readKeys(octx, "destroy session (read report keys)", reports)
	if err != nil {
		return err
	}
	for _, k := range reports {
		if p := current[k]; p != nil && p.Session == string(id) {
			held = append(held, p)
		}
	}
	if err := c.unlock(octx, id, held, "destroy session"); err != nil {
		return err
	}
	if _, err := c.client.Session().Destroy(string(id), (&api.WriteOptions{}).WithContext(octx)); err != nil {
		return c.fail(octx, "destroy session", err)
	}
	c.forget(id)
	if info.check != "" {
		c.deregisterCheck(octx, info.check)
	}
	return nil
}

// lookup returns what is known of a session, reading it from Consul when
// this coordinator did not create it. A missing session wraps
// shard.ErrSessionInvalid.
func (c *Coordinator) lookup(ctx context.Context, id shard.SessionID) (sessionInfo, error) {
	c.mu.Lock()
	info, ok := c.sessions[id]
	c.mu.Unlock()
	if ok {
		return info, nil
	}
	if id == "" {
		return sessionInfo{}, sessionGone(id, "is empty")
	}
	entry, _, err := c.client.Session().Info(string(id), (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		var se api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusBadRequest {
			// Not a UUID: Consul could never have created it.
			return sessionInfo{}, sessionGone(id, "does not exist (not a Consul session ID)")
		}
		return sessionInfo{}, c.fail(ctx, "read session", err)
	}
	if entry == nil {
		return sessionInfo{}, sessionGone(id, "does not exist (expired, destroyed or never created)")
	}
	info = sessionInfo{worker: entry.Name}
	for _, ch := range sessionCheckIDs(entry) {
		if strings.HasPrefix(ch, CheckIDPrefix) {
			info.check = ch
		}
	}
	c.mu.Lock()
	c.sessions[id] = info
	c.mu.Unlock()
	return info, nil
}

// requireSession checks that a session exists, for calls that made no
// write that would have shown it (an Acquire that locked nothing).
func (c *Coordinator) requireSession(ctx context.Context, id shard.SessionID) error {
	c.forget(id) // the cache says nothing about liveness: ask Consul
	_, err := c.lookup(ctx, id)
	return err
}

func (c *Coordinator) forget(id shard.SessionID) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}
