package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/memory"
)

// Backend is the coordinator the demo's fleet runs on. The zero Options
// use the embedded one; ConsulBackend puts the fleet on a real Consul.
type Backend interface {
	// Describe names the backend in the demo's first lines.
	Describe() string
	// Open prepares the backend once, before any worker starts. floor is
	// the highest token the offset store has seen: every token handed out
	// must be above it, or a kept data dir would refuse every commit. It
	// returns the coordinator the demo reads the fleet from.
	Open(ctx context.Context, floor shard.Token) (shard.Coordinator, error)
	// Worker returns the coordinator one worker talks to.
	Worker(id string) (shard.Coordinator, error)
	// Expiry bounds how long after its holder stopped renewing a session
	// is invalidated under policy p. The fault schedule sizes the pause and
	// the settling time from it.
	Expiry(p shard.LeasePolicy) time.Duration
	// Close releases the backend's resources, once every worker stopped.
	Close()
}

// embedded is the default Backend: one shard/memory coordinator shared by
// every worker, invalidating a session exactly TTL after its last renewal.
type embedded struct{ coord *memory.Coordinator }

func (e *embedded) Describe() string { return "the embedded coordinator (shard/memory)" }

func (e *embedded) Open(_ context.Context, floor shard.Token) (shard.Coordinator, error) {
	e.coord = memory.New(memory.WithStartToken(floor))
	return e.coord, nil
}

func (e *embedded) Worker(string) (shard.Coordinator, error) { return e.coord, nil }
func (e *embedded) Expiry(p shard.LeasePolicy) time.Duration { return p.TTL }
func (e *embedded) Close()                                   {}

// consulBackend runs the fleet on Consul: every worker has its own
// shard/consul Coordinator (its own connection, session and, in check
// liveness, health check), so a crashed worker's session really is
// abandoned and Consul invalidates it on its own timers.
type consulBackend struct {
	cfg consul.Config

	mu     sync.Mutex
	coords []*consul.Coordinator
}

// ConsulPolicy is the demo's lease policy on Consul with check liveness: a
// 2.5 s check TTL, renewals every 500 ms and a 1 s pause budget. Each
// renewal is two HTTP requests to the agent, which a loaded machine can
// delay, so a worker is given 1.5 s without a successful one before it
// steps down (DemoPolicy gives 1 s, plenty in process), and the lock-delay
// is that step-down deadline, the least the rule allows; the schedule still
// fits in 20 s.
var ConsulPolicy = shard.LeasePolicy{TTL: 2500 * time.Millisecond, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second,
	LockDelay: 1500 * time.Millisecond}

// consulSlack is what Consul may take beyond the liveness TTL to invalidate
// a session: the agent's sync of the critical check to the servers and the
// invalidation's own Raft write.
const consulSlack = 500 * time.Millisecond

// ConsulBackend returns a Backend on the Consul that cfg names, with the
// fleet under cfg.Prefix. cfg is validated here; Consul is first contacted
// by Open.
func ConsulBackend(cfg consul.Config) (Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &consulBackend{cfg: cfg}, nil
}

func (c *consulBackend) Describe() string {
	liveness := c.cfg.Liveness
	if liveness == "" {
		liveness = consul.LivenessCheck
	}
	return fmt.Sprintf("Consul at %s, prefix %q, liveness %s", c.cfg.Address, c.cfg.Prefix, liveness)
}

func (c *consulBackend) Expiry(p shard.LeasePolicy) time.Duration {
	if c.cfg.Liveness == consul.LivenessTTL {
		return 2*p.TTL + consulSlack // Consul may take up to 2·TTL
	}
	return p.TTL + consulSlack
}

func (c *consulBackend) Worker(string) (shard.Coordinator, error) { return c.open() }

func (c *consulBackend) open() (*consul.Coordinator, error) {
	co, err := consul.New(c.cfg)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.coords = append(c.coords, co)
	c.mu.Unlock()
	return co, nil
}

// Open reads the fleet once, retrying with backoff for up to 10 s, so an
// unreachable agent or a refusing ACL is a clear error before any worker
// starts, and checks that Consul's index is above the store's floor (it is
// not when Consul's data was wiped since the data dir was written).
func (c *consulBackend) Open(ctx context.Context, floor shard.Token) (shard.Coordinator, error) {
	obs, err := c.open()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	wait := 100 * time.Millisecond
	for {
		snap, err := obs.Fleet().Watch(ctx, 0)
		switch {
		case err == nil && grantable(snap) <= floor:
			return nil, fmt.Errorf("demo: the offsets in the data dir were written with tokens up to %d, but Consul at %s grants at most %d now (index %d: was its data wiped?): use a fresh --data dir, or raise the fleet's generation ('shardctl recover')",
				floor, c.cfg.Address, grantable(snap), snap.Index)
		case err == nil:
			return obs, nil
		case !errors.Is(err, shard.ErrUnavailable) || time.Now().Add(wait).After(deadline):
			return nil, fmt.Errorf("demo: reading the fleet under %q from Consul at %s: %w", c.cfg.Prefix, c.cfg.Address, err)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(wait):
			wait = min(2*wait, 2*time.Second)
		}
	}
}

func (c *consulBackend) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, co := range c.coords {
		co.Close()
	}
}

// Timing of the fault schedule that depends on the backend (see schedule.go).

// backend returns o.Backend, or the embedded one.
func (o Options) backend() Backend {
	if o.Backend != nil {
		return o.Backend
	}
	return &embedded{}
}

// pauseFor is how long the pause fault freezes a worker: past the session's
// invalidation and lock-delay, so that its shards have new owners (who
// fenced them) when its late commits arrive.
func (o Options) pauseFor() time.Duration {
	return o.backend().Expiry(o.Policy) + o.Policy.EffectiveLockDelay() + 1500*time.Millisecond
}

// settleTime is how long the fleet is given to settle after a fault.
func (o Options) settleTime() time.Duration {
	return max(settleTime, o.backend().Expiry(o.Policy)+o.Policy.EffectiveLockDelay()+3*time.Second)
}

// cycle is the period of the fault schedule: room for the pause to end
// and the fleet to settle before the next crash.
func (o Options) cycle() time.Duration {
	return max(cycle, pauseAt+o.pauseFor()+o.settleTime())
}

// minDuration is the shortest run that fits one round of faults and lets
// the fleet settle after the last one.
func (o Options) minDuration() time.Duration {
	return max(minDuration, pauseAt+o.pauseFor()+o.settleTime())
}

// grantable is the token of a lock taken at the listing's index in the
// fleet's generation: every token the coordinator grants next is above it.
func grantable(snap shard.Snapshot) shard.Token {
	var gen uint32
	if snap.Config != nil {
		gen = snap.Config.Generation
	}
	t, err := shard.MakeToken(gen, min(snap.Index, shard.MaxIndex))
	if err != nil {
		return 0
	}
	return t
}
