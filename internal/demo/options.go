package demo

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Options configure a demo run.
type Options struct {
	Workers  int           // initial workers (default 12)
	Shards   int           // shards (default 128)
	Duration time.Duration // 0: until ctx ends
	Seed     uint64        // fault schedule and jitter; 0 picks one
	// Start is the time the progress lines count from ("[  8.0s]"); zero:
	// when Run starts. A caller that stamps its logger's lines the same way
	// (logging.ConsoleSince) passes the same time.
	Start time.Time
	// DataDir keeps the bbolt offsets file; empty means a temp dir that is
	// removed at the end.
	DataDir string
	// Store overrides the offset store (tests use an in-memory one).
	Store offsets.Store
	// Backend is the coordinator the fleet runs on. Nil: the embedded one
	// (shard/memory). ConsulBackend runs it on a real Consul.
	Backend Backend
	// Policy is the lease policy; the default is short so faults play out
	// in seconds: TTL 2 s, renew every 400 ms, 1 s pause budget.
	Policy shard.LeasePolicy
	// Rate is messages per second per shard in the synthetic stream.
	Rate int // default 50
	// CommitEvery spaces a handler's commits (default 500 ms, jittered).
	CommitEvery time.Duration
	// Progress is how often a progress line is printed (default 2 s).
	Progress time.Duration

	// Registry receives every worker's metrics; the summary's failover and
	// move counts are read from it. Nil: a private registry.
	Registry *prometheus.Registry
	Logger   *zap.Logger

	// OnStart, if set, is called once the first workers are spawned and
	// before the first fault, with handles on the running demo (a
	// dashboard serves them). It must return quickly; the handles work
	// until Run returns.
	OnStart func(Live)
}

// DemoPolicy is the demo's default lease policy.
var DemoPolicy = shard.LeasePolicy{TTL: 2 * time.Second, RenewEvery: 400 * time.Millisecond, PauseBudget: time.Second, LockDelay: time.Second}

func (o Options) withDefaults() Options {
	if o.Workers == 0 {
		o.Workers = 12
	}
	if o.Shards == 0 {
		o.Shards = 128
	}
	if o.Policy == (shard.LeasePolicy{}) {
		o.Policy = DemoPolicy
	}
	if o.Rate == 0 {
		o.Rate = 50
	}
	if o.CommitEvery == 0 {
		o.CommitEvery = 500 * time.Millisecond
	}
	if o.Progress == 0 {
		o.Progress = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

// minDuration is the shortest run that fits one round of faults and lets
// the fleet settle after the last one.
const minDuration = 20 * time.Second

// Validate reports every problem at once.
func (o Options) Validate() error {
	o = o.withDefaults()
	var problems []string
	add := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	if o.Workers < 2 || o.Workers > 1000 {
		add("--workers %d: want 2..1000 (the demo crashes one and pauses another)", o.Workers)
	}
	if o.Shards < 1 || o.Shards > shard.MaxShards {
		add("--shards %d: want 1..%d", o.Shards, shard.MaxShards)
	}
	if min := o.minDuration(); o.Duration < 0 || (o.Duration > 0 && o.Duration < min) {
		add("--duration %v: want 0 (until Ctrl-C) or at least %v, which fits the demo's faults (a crash at %v, a pause at %v for %v, a join at %v) and the fleet settling after the last", o.Duration, min,
			crashAt, pauseAt, o.pauseFor(), joinAt)
	}
	if err := o.Policy.Validate(); err != nil {
		add("%v", err)
	}
	if o.Rate < 1 {
		add("--rate %d: want at least 1 message per second", o.Rate)
	}
	if len(problems) > 0 {
		return errors.New("demo: " + strings.Join(problems, "; "))
	}
	return nil
}
