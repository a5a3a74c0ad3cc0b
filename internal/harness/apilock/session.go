package apilock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// errSessionLost ends a tuned worker's term: its check was refused or its
// member key, which its session holds, was lost.
var errSessionLost = errors.New("apilock: the session is gone")

// openSession registers a service instance of ServiceName with a passing
// TTL check of cfg.TTL, and creates a release session bound to it and to
// serfHealth with cfg.LockDelay: a worker that stops passing the check for
// a TTL loses the session and, a lock-delay later, its locks.
func openSession(ctx context.Context, c *api.Client, cfg Config) (session, check string, err error) {
	check = "apilock-" + cfg.ID + "-" + randomHex(4)
	reg := &api.AgentServiceRegistration{
		ID: check, Name: ServiceName, Meta: map[string]string{"worker": cfg.ID},
		Check: &api.AgentServiceCheck{CheckID: check, TTL: cfg.TTL.String(), Status: api.HealthPassing, DeregisterCriticalServiceAfter: "1m"},
	}
	if err := c.Agent().ServiceRegisterOpts(reg, api.ServiceRegisterOpts{}.WithContext(ctx)); err != nil {
		return "", "", fmt.Errorf("apilock: registering check %s: %w", check, err)
	}
	se := &api.SessionEntry{
		Name: cfg.ID, Behavior: api.SessionBehaviorRelease, LockDelay: cfg.LockDelay,
		NodeChecks: []string{"serfHealth"}, ServiceChecks: []api.ServiceCheck{{ID: check}},
	}
	session, _, err = c.Session().Create(se, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		deregister(c, check)
		return "", "", fmt.Errorf("apilock: creating a session bound to %s: %w", check, err)
	}
	return session, check, nil
}

// keepPassing passes the check every cfg.RenewEvery until ctx ends, and
// calls lost if the agent no longer knows the check. Other failures are
// retried on the next tick: a check not passed for its TTL turns critical
// by itself.
func keepPassing(ctx context.Context, c *api.Client, cfg Config, check string, lost func(error)) {
	t := time.NewTicker(cfg.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := c.Agent().UpdateTTLOpts(check, "", api.HealthPassing, (&api.QueryOptions{}).WithContext(ctx))
		var se api.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusNotFound || strings.Contains(se.Body, "does not have associated TTL")) {
			lost(fmt.Errorf("%w: check %s: %v", errSessionLost, check, err))
			return
		}
	}
}

// closeSession destroys the session and removes its check, best effort
// and briefly: a check left behind turns critical and is reaped by the
// agent a minute later.
func closeSession(c *api.Client, session, check string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = c.Session().Destroy(session, (&api.WriteOptions{}).WithContext(ctx))
	deregister(c, check)
}

func deregister(c *api.Client, check string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Agent().ServiceDeregisterOpts(check, (&api.QueryOptions{}).WithContext(ctx))
}

// jitter returns a duration in [d/2, d).
func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
