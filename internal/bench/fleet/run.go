package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// Size is a fleet's size.
type Size struct{ Workers, Shards int }

// The sizes the scenarios share: Common, the fleet every system runs
// (12 workers over 128 shards); Large, the large fleet of every goal
// (100 × 10,000), which shardlease alone runs (the baselines would need a
// million api.Locks); and their --small smoke sizes.
var (
	Common      = Size{12, 128}
	CommonSmall = Size{3, 16}
	Large       = Size{100, 10000}
	LargeSmall  = Size{10, 200}
)

// Metric names a row's metric with the fleet's size.
func (s Size) Metric(what string) string {
	return fmt.Sprintf("%s, %d workers × %d shards", what, s.Workers, s.Shards)
}

// FastFailover is the policy of the fast-failover liveness mode measured
// here, the one docs/tuning.md recommends (shard.FastPolicy): a session
// bound to a 1.5 s TTL health check, renewed every 300 ms, a 900 ms pause
// budget (2 × 0.3 + 0.9 ≤ 1.5), and an 800 ms lock-delay, which covers the
// step-down deadline 1.5 − 0.9 = 0.6 s so that a session ended before its
// TTL cannot free the locks while its cut-off worker still acts as owner.
var FastFailover = shard.FastPolicy

// Shape is the fleet an ownership scenario runs on: its size, the lease
// policy of its shardlease workers (and of the tuned baseline's), and
// whether its workers are OS processes.
type Shape struct {
	Size
	Policy     shard.LeasePolicy
	PolicyName string
	// AtScale: the large fleet, run by shardlease alone; its rows' metrics
	// name the size.
	AtScale bool
	// Processes: each worker is a process of its own (Procs), killed with
	// SIGKILL; otherwise the workers share this process.
	Processes bool
	// Engine is what shardlease's workers run on: bench.EngineConsul (or
	// "") or bench.EngineEtcd. The baselines run on Consul only.
	Engine string
	// Quick runs the default baseline with a 10 s session TTL and a 1 ms
	// lock-delay, a crashed worker's sessions destroyed by the harness,
	// so that a smoke run ends sooner (its figures are not results).
	Quick bool
}

// engine is s.Engine, Consul when unset.
func (s Shape) engine() string {
	if s.Engine == "" {
		return bench.EngineConsul
	}
	return s.Engine
}

// Fast is a fleet of size on the fast-failover policy.
func Fast(size Size) Shape {
	return Shape{Size: size, Policy: FastFailover, PolicyName: bench.PolicyFast}
}

// Default is a fleet of size on shardlease's default policy.
func Default(size Size) Shape {
	return Shape{Size: size, Policy: shard.DefaultPolicy, PolicyName: bench.PolicyDefault}
}

// AtScale is the large fleet of size, on the default policy as cold-start
// runs it: 100 workers renewing every 300 ms would load a small machine's
// agent for nothing a join or a hand-off measures.
func AtScale(size Size) Shape {
	s := Default(size)
	s.AtScale = true
	return s
}

// Metric names a row's metric, with the fleet's size when it is at scale.
func (s Shape) Metric(what string) string {
	if s.AtScale {
		return s.Size.Metric(what)
	}
	return what
}

// SettleWithin bounds every wait for a fleet to reach its starting state.
const SettleWithin = 2 * time.Minute

// New makes a fresh fleet of system for a scenario.
func New(env *bench.Env, system, scenario string, shape Shape) (Fleet, error) {
	switch {
	case shape.Processes:
		return newProcs(env, shape.engine(), system, scenario, shape.Shards, shape.Policy, shape.Quick)
	case system == bench.SystemShardlease:
		return NewShardlease(env, scenario, Options{Engine: shape.engine(), Shards: shape.Shards, Policy: shape.Policy})
	case shape.engine() != bench.EngineConsul:
		return nil, fmt.Errorf("%s runs on Consul only, not on %s", system, shape.Engine)
	}
	return NewBaseline(env, system, scenario, shape.Shards, shape.Policy, shape.Quick)
}

// Ready is a fleet's starting state: every shard owned by one of the
// workers members; for shardlease, balanced within one; for the tuned
// baseline, no member above its cap of ⌈shards/workers⌉ (the first
// workers up take more and give it back as the others join). The default
// baseline never balances.
func Ready(f Fleet, shards, workers int) func(procfleet.View) bool {
	return func(v procfleet.View) bool {
		if len(v.Members) != workers || v.OwnedByMembers() != shards {
			return false
		}
		switch f.System() {
		case bench.SystemShardlease:
			return v.Spread() <= 1
		case bench.SystemTuned:
			for _, n := range v.Counts() {
				if n > (shards+workers-1)/workers {
					return false
				}
			}
		}
		return true
	}
}

// Run is a fleet at its starting size, which every trial of an ownership
// scenario shares: after every trial the fleet is brought back to it and
// waited for.
type Run struct {
	Env  *bench.Env
	F    Fleet
	Size     // the starting size
	next int // the number of the next worker to add
}

// Start makes a fleet of shape, adds its workers and waits until it is
// ready.
func Start(ctx context.Context, env *bench.Env, system, scenario string, shape Shape) (*Run, error) {
	f, err := New(env, system, scenario, shape)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	r, err := StartOn(ctx, env, f, shape.Size)
	if err != nil {
		return nil, err
	}
	env.Logf("shardbench: %s %s: %d workers own %d shards after %v", scenario, system, shape.Workers, shape.Shards, time.Since(began).Round(time.Millisecond))
	return r, nil
}

// StartOn adds size's workers to f and waits until it is ready; on error it
// closes f.
func StartOn(ctx context.Context, env *bench.Env, f Fleet, size Size) (*Run, error) {
	return StartWithin(ctx, env, f, size, SettleWithin)
}

// StartWithin is StartOn waiting at most within for the fleet to be
// ready; past it the error wraps ErrNotReached.
func StartWithin(ctx context.Context, env *bench.Env, f Fleet, size Size, within time.Duration) (*Run, error) {
	return startWithin(ctx, env, f, size, within, 1)
}

// StartTogether is StartWithin with the workers added from parallel
// goroutines at once: a thousand workers in one process start together as
// a thousand processes would, rather than one after another, each dialing
// its own client first, so that the fleet's joins come in one burst.
func StartTogether(ctx context.Context, env *bench.Env, f Fleet, size Size, within time.Duration, parallel int) (*Run, error) {
	return startWithin(ctx, env, f, size, within, parallel)
}

func startWithin(ctx context.Context, env *bench.Env, f Fleet, size Size, within time.Duration, parallel int) (*Run, error) {
	r := &Run{Env: env, F: f, Size: size, next: 1 + size.Workers}
	ids := make(chan string, size.Workers)
	for i := range size.Workers {
		ids <- WorkerID(i + 1)
	}
	close(ids)
	errs := make([]error, parallel)
	var wg sync.WaitGroup
	for p := range parallel {
		wg.Go(func() {
			for id := range ids {
				if errs[p] = f.Add(ctx, id); errs[p] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		f.Close()
		return nil, err
	}
	if _, _, err := WaitFor(ctx, f, within, "a ready fleet", Ready(f, size.Shards, size.Workers)); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// NextID is the ID AddWorker gives the next worker.
func (r *Run) NextID() string { return WorkerID(r.next) }

// AddWorker adds the next worker.
func (r *Run) AddWorker(ctx context.Context) error {
	id := r.NextID()
	r.next++
	return r.F.Add(ctx, id)
}

// Settle waits until the fleet is back at its starting state.
func (r *Run) Settle(ctx context.Context) error {
	_, _, err := WaitFor(ctx, r.F, SettleWithin, "a ready fleet", Ready(r.F, r.Shards, r.Workers))
	return err
}
