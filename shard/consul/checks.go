package consul

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/shard"
)

// ServiceName is the Consul service under which each session's liveness
// check is registered (LivenessCheck): one instance per worker session, so
// `consul catalog services` and the UI show the fleet's workers and their
// health.
const ServiceName = "shardlease"

// CheckIDPrefix starts the ID of every service instance and health check
// this package registers: "shardlease-session-<worker>-<random>", the same
// string for both. The prefix is how stale ones are recognised.
const CheckIDPrefix = "shardlease-session-"

// deregisterCriticalAfter asks the agent to remove a session's service
// instance once its check has been critical this long (Consul's minimum is
// one minute), so that a crashed worker's check disappears even if no
// worker ever creates a session on that agent again. The session itself
// was invalidated the moment the check went critical.
const deregisterCriticalAfter = "1m"

// registerCheck registers, on the agent, a service instance with a passing
// TTL check for a new session, after removing stale ones, and returns the
// check's ID. The check's TTL is the session's: a worker that stops passing
// it for that long loses the session.
//
// Why a service check and not a node check: a critical node-level check
// marks the whole node unhealthy, so a crashed worker's check would hide
// every other service on that agent from healthy-service queries until
// someone removed it. A service check only affects its own instance, the
// agent reaps it by itself (DeregisterCriticalServiceAfter), and it needs
// service write on ServiceName instead of node write.
func (c *Coordinator) registerCheck(ctx context.Context, spec shard.SessionSpec) (string, error) {
	c.reapChecks(ctx)
	id := CheckIDPrefix + sanitize(spec.Worker) + "-" + randomHex(6)
	reg := &api.AgentServiceRegistration{
		ID:   id,
		Name: ServiceName,
		Meta: map[string]string{"worker": spec.Worker, "prefix": c.cfg.Prefix},
		Check: &api.AgentServiceCheck{
			CheckID: id,
			Name:    "shardlease worker " + spec.Worker + " session",
			Notes: "Liveness of a shardlease worker's session under " + c.cfg.Prefix +
				"; passed on every renewal, deregistered when the worker stops.",
			TTL:                            spec.TTL.String(),
			Status:                         api.HealthPassing,
			DeregisterCriticalServiceAfter: deregisterCriticalAfter,
		},
	}
	if err := c.client.Agent().ServiceRegisterOpts(reg, api.ServiceRegisterOpts{}.WithContext(ctx)); err != nil {
		return "", c.fail(ctx, "register session check", err)
	}
	return id, nil
}

// deregisterCheck removes a session's service instance and its check, best
// effort: one left behind goes critical after its TTL and is removed by the
// agent a minute later, or by the next Sessions.Create.
func (c *Coordinator) deregisterCheck(ctx context.Context, id string) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	_ = c.client.Agent().ServiceDeregisterOpts(id, (&api.QueryOptions{}).WithContext(ctx))
}

// reapChecks removes this package's checks on the agent that are critical
// and bound to no session: what a crashed worker leaves behind, before the
// agent's own reaper gets to it. A critical check cannot hold a session up
// (Consul invalidated it when the check went critical), and the session
// lookup makes sure a check is never removed from under a session that
// still names it. Best effort: a failure leaves them for the next time.
func (c *Coordinator) reapChecks(ctx context.Context) {
	checks, err := c.client.Agent().ChecksWithFilterOpts("", (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return
	}
	var stale []*api.AgentCheck
	for id, ch := range checks {
		if strings.HasPrefix(id, CheckIDPrefix) && ch.Status == api.HealthCritical {
			stale = append(stale, ch)
		}
	}
	if len(stale) == 0 {
		return
	}
	sessions, _, err := c.client.Session().Node(stale[0].Node, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return
	}
	inUse := map[string]bool{}
	for _, s := range sessions {
		for _, id := range sessionCheckIDs(s) {
			inUse[id] = true
		}
	}
	for _, ch := range stale {
		if inUse[ch.CheckID] {
			continue
		}
		q := (&api.QueryOptions{}).WithContext(ctx)
		if ch.ServiceID != "" {
			_ = c.client.Agent().ServiceDeregisterOpts(ch.ServiceID, q)
		} else {
			_ = c.client.Agent().CheckDeregisterOpts(ch.CheckID, q)
		}
	}
}

// sessionCheckIDs lists every check a session is bound to.
func sessionCheckIDs(s *api.SessionEntry) []string {
	ids := append(append([]string{}, s.NodeChecks...), s.Checks...)
	for _, sc := range s.ServiceChecks {
		ids = append(ids, sc.ID)
	}
	return ids
}

// sanitize keeps a worker ID readable in a check ID, which appears in URL
// paths: anything but letters, digits, '-', '_' and '.' becomes '_'.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
