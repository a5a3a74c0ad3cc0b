package apilock

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

// Mode is which baseline a worker is.
type Mode string

// The two baselines.
const (
	Default Mode = "default" // api.Lock with every option at its default
	Tuned   Mode = "tuned"   // one session per worker bound to a TTL check, a spread
)

// ServiceName is the Consul service under which a tuned worker registers
// its session's TTL check.
const ServiceName = "apilock"

// Config is one worker.
type Config struct {
	// Consul is the worker's connection. Run makes its own client from a
	// copy, with the transport wrapped so that Run can end what it still
	// has in flight when it returns.
	Consul *api.Config
	// Prefix holds the fleet's keys: Prefix/shards/<shard>,
	// Prefix/members/<id>.
	Prefix string
	// ID names the worker: the value of its locks.
	ID string
	// Shards are the shard names (ShardNames).
	Shards []string
	Mode   Mode
	// Tuned: the session's check TTL, how often the worker passes the
	// check, and the session's lock-delay (a refused try is retried this
	// long after it began).
	TTL, RenewEvery, LockDelay time.Duration
	// Quick (Default only) shortens the session TTL to Consul's 10 s
	// minimum and the lock-delay to 1 ms, for smoke runs whose figures are
	// not results.
	Quick bool
	// OnStart, if set, is called when the worker starts a shard's work,
	// right after acquiring its lock; the function it returns, if not nil,
	// when the work stops (the lock lost, released, or the worker ending).
	OnStart func(shard string) (stopped func())
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var problems []error
	if c.Consul == nil {
		problems = append(problems, errors.New("apilock: no Consul config"))
	}
	if c.Prefix == "" || c.ID == "" {
		problems = append(problems, fmt.Errorf("apilock: prefix %q and id %q must not be empty", c.Prefix, c.ID))
	}
	if len(c.Shards) == 0 {
		problems = append(problems, errors.New("apilock: no shards"))
	}
	switch c.Mode {
	case Default:
	case Tuned:
		if c.TTL <= 0 || c.RenewEvery <= 0 || c.RenewEvery >= c.TTL || c.LockDelay < 0 {
			problems = append(problems, fmt.Errorf("apilock: tuned with ttl %v, renew %v, lock-delay %v: want 0 < renew < ttl and lock-delay ≥ 0",
				c.TTL, c.RenewEvery, c.LockDelay))
		}
	default:
		problems = append(problems, fmt.Errorf("apilock: mode %q, want %q or %q", c.Mode, Default, Tuned))
	}
	return errors.Join(problems...)
}

// ShardNames names n shards: shard-000, shard-001, …
func ShardNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("shard-%03d", i)
	}
	return out
}

// ShardKey is the key of a shard's lock under prefix.
func ShardKey(prefix, shard string) string { return prefix + "/shards/" + shard }

// ShardsPrefix is the prefix of every shard lock's key (ends in "/").
func ShardsPrefix(prefix string) string { return prefix + "/shards/" }

func memberKey(prefix, id string) string { return prefix + "/members/" + id }

func membersPrefix(prefix string) string { return prefix + "/members/" }

// started calls OnStart and returns the function to call when the work
// stops (never nil).
func (c Config) started(shard string) func() {
	if c.OnStart == nil {
		return func() {}
	}
	if stop := c.OnStart(shard); stop != nil {
		return stop
	}
	return func() {}
}
