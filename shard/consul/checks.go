package consul

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/shard"
)

// CheckIDPrefix starts the ID of every health check this package registers
// (LivenessCheck): "shardlease-session-<worker>-<random>". The prefix is how
// stale checks are recognised and cleaned up.
const CheckIDPrefix = "shardlease-session-"

// registerCheck registers a passing TTL check for a new session on the
// agent, after removing stale ones. The check's TTL is the session's: a
// worker that stops passing it for that long loses the session.
func (c *Coordinator) registerCheck(parent, ctx context.Context, spec shard.SessionSpec) (string, error) {
	c.reapChecks(ctx)
	id := CheckIDPrefix + sanitize(spec.Worker) + "-" + randomHex(6)
	reg := &api.AgentCheckRegistration{
		ID:    id,
		Name:  "shardlease worker " + spec.Worker,
		Notes: "Liveness of a shardlease worker's session under " + c.cfg.Prefix + "; passed on every renewal, deregistered when the worker stops.",
		AgentServiceCheck: api.AgentServiceCheck{
			TTL:    spec.TTL.String(),
			Status: api.HealthPassing,
		},
	}
	if err := c.client.Agent().CheckRegisterOpts(reg, (&api.QueryOptions{}).WithContext(ctx)); err != nil {
		return "", c.fail(parent, "register session check", err)
	}
	return id, nil
}

// deregisterCheck removes a check, best effort: a check left behind goes
// critical after its TTL and is reaped by the next CreateSession.
func (c *Coordinator) deregisterCheck(ctx context.Context, id string) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	_ = c.client.Agent().CheckDeregisterOpts(id, (&api.QueryOptions{}).WithContext(ctx))
}

// reapChecks deregisters this package's checks on the agent that are
// critical and bound to no session: what a crashed worker leaves behind. A
// critical check cannot hold a session up (Consul invalidated it when the
// check went critical), and the session lookup makes sure a check is never
// removed from under a session that still names it. Best effort: a failure
// leaves the checks for the next time.
func (c *Coordinator) reapChecks(ctx context.Context) {
	checks, err := c.client.Agent().ChecksWithFilterOpts("", (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return
	}
	var stale []string
	node := ""
	for id, ch := range checks {
		if strings.HasPrefix(id, CheckIDPrefix) && ch.Status == api.HealthCritical {
			stale = append(stale, id)
			node = ch.Node
		}
	}
	if len(stale) == 0 {
		return
	}
	sessions, _, err := c.client.Session().Node(node, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return
	}
	inUse := map[string]bool{}
	for _, s := range sessions {
		for _, ch := range append(append([]string{}, s.NodeChecks...), s.Checks...) {
			inUse[ch] = true
		}
	}
	for _, id := range stale {
		if !inUse[id] {
			_ = c.client.Agent().CheckDeregisterOpts(id, (&api.QueryOptions{}).WithContext(ctx))
		}
	}
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
