package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// The ownership scenarios: how fast shards move when they must.
// Each runs on one fleet per system, reused across trials: after every
// trial the fleet is brought back to its starting size and waited for.

// fleetShape is the fleet an ownership scenario runs on: its size, the
// lease policy of its shardlease workers (and of the tuned baseline's), and
// whether its workers are OS processes.
type fleetShape struct {
	coldSize
	policy     shard.LeasePolicy
	policyName string
	// atScale: the large fleet (100 × 10,000), run by shardlease alone
	// (the baseline would need a million api.Locks); its rows' metrics name
	// the size.
	atScale bool
	// processes: each worker is a process of its own (procFleet), killed
	// with SIGKILL; otherwise the workers share this process.
	processes bool
}

// ownershipShape is the fleet every system runs: 12 workers over 128
// shards, or with --small 3 over 16, on the fast-failover policy.
func ownershipShape(env *bench.Env) fleetShape {
	size := coldSize{12, 128}
	if env.Small {
		size = coldSize{3, 16}
	}
	return fleetShape{coldSize: size, policy: fastFailover, policyName: bench.PolicyFast}
}

// defaultShape is ownershipShape on shardlease's default policy.
func defaultShape(env *bench.Env) fleetShape {
	s := ownershipShape(env)
	s.policy, s.policyName = shard.DefaultPolicy, bench.PolicyDefault
	return s
}

// scaleShape is the large fleet, cold-start's goal size (100 ×
// 10,000; with --small 10 × 200), on the default policy as cold-start runs
// it: 100 workers renewing every 300 ms would load a small machine's agent
// for nothing a join or a hand-off measures.
func scaleShape(env *bench.Env) fleetShape {
	goal, _, _ := coldSizes(env)
	return fleetShape{coldSize: goal, policy: shard.DefaultPolicy, policyName: bench.PolicyDefault, atScale: true}
}

// metric names a row's metric, with the fleet's size when it is at scale.
func (s fleetShape) metric(what string) string {
	if s.atScale {
		return coldMetric(what, s.coldSize)
	}
	return what
}

// settleWithin bounds every wait for a fleet to reach its starting state.
const settleWithin = 2 * time.Minute

// newFleet makes a fresh fleet of system for a scenario.
func newFleet(env *bench.Env, system, scenario string, shape fleetShape) (fleet, error) {
	switch {
	case shape.processes:
		return newProcFleet(env, system, scenario, shape.shards, shape.policy)
	case system == bench.SystemShardlease:
		return newSLFleet(env, scenario, slOptions{shards: shape.shards, policy: shape.policy})
	}
	return newBaselineFleet(env, system, scenario, shape.shards, shape.policy)
}

// ready is a fleet's starting state: every shard owned by one of the
// workers members; for shardlease, balanced within one; for the tuned
// baseline, no member above its cap of ⌈shards/workers⌉ (the first
// workers up take more and give it back as the others join). The default
// baseline never balances.
func ready(f fleet, shards, workers int) func(procfleet.View) bool {
	return func(v procfleet.View) bool {
		if len(v.Members) != workers || v.OwnedByMembers() != shards {
			return false
		}
		switch f.system() {
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

// fleetRun holds what every trial of an ownership scenario shares.
type fleetRun struct {
	env             *bench.Env
	f               fleet
	workers, shards int
	next            int // the number of the next worker to add
}

// startFleet adds the workers of the fleet both systems run and waits
// until it is ready.
func startFleet(ctx context.Context, env *bench.Env, system, scenario string) (*fleetRun, error) {
	return startShaped(ctx, env, system, scenario, ownershipShape(env))
}

// startShaped adds shape's workers and waits until the fleet is ready.
func startShaped(ctx context.Context, env *bench.Env, system, scenario string, shape fleetShape) (*fleetRun, error) {
	workers, shards := shape.workers, shape.shards
	f, err := newFleet(env, system, scenario, shape)
	if err != nil {
		return nil, err
	}
	r := &fleetRun{env: env, f: f, workers: workers, shards: shards, next: 1}
	began := time.Now()
	for range workers {
		if err := r.addWorker(ctx); err != nil {
			f.close()
			return nil, err
		}
	}
	if err := r.settle(ctx); err != nil {
		f.close()
		return nil, err
	}
	env.Logf("shardbench: %s %s: %d workers own %d shards after %v", scenario, system, workers, shards, time.Since(began).Round(time.Millisecond))
	return r, nil
}

func (r *fleetRun) addWorker(ctx context.Context) error {
	id := workerID(r.next)
	r.next++
	return r.f.add(ctx, id)
}

// settle waits until the fleet is back at its starting state.
func (r *fleetRun) settle(ctx context.Context) error {
	_, _, err := waitFor(ctx, r.f, settleWithin, "a ready fleet", ready(r.f, r.shards, r.workers))
	return err
}

// victim picks the worker to take away in trial i: members owning at least
// one shard take turns, those pick allows; theAssignor picks the worker
// whose session holds P/assignor.
func (r *fleetRun) victim(ctx context.Context, i int, pick victimRule) (string, []string, error) {
	v, err := r.f.view(ctx, 0)
	if err != nil {
		return "", nil, err
	}
	assignor, err := assignorOf(ctx, r.f, pick == theAssignor)
	if err != nil {
		return "", nil, err
	}
	if pick == theAssignor {
		return assignor, v.ShardsOf(assignor), nil
	}
	var owning []string
	for _, m := range v.Members {
		if len(v.ShardsOf(m)) > 0 && (pick == anyWorker || m != assignor) {
			owning = append(owning, m)
		}
	}
	if len(owning) == 0 {
		return "", nil, errors.New("no worker owns a shard")
	}
	slices.Sort(owning)
	id := owning[i%len(owning)]
	return id, v.ShardsOf(id), nil
}

// reownedBy is the failover condition: every shard in lost is owned by a
// worker other than gone.
func reownedBy(gone string, lost []string) func(procfleet.View) bool {
	return func(v procfleet.View) bool {
		for _, s := range lost {
			if w, ok := v.Owners[s]; !ok || w == gone {
				return false
			}
		}
		return true
	}
}

// keepsAll reports whether worker id still owns every shard in lost.
func keepsAll(v procfleet.View, id string, lost []string) bool {
	for _, s := range lost {
		if v.Owners[s] != id {
			return false
		}
	}
	return true
}

// takeAway measures, over the trials, the time from taking one worker
// away (crash or clean stop) until its shards are owned again, for one
// system; a new worker replaces it between trials.
func takeAway(ctx context.Context, env *bench.Env, system, scenario string, crash bool, pick victimRule, shape fleetShape, trials int, within time.Duration) (takeAwayFigures, error) {
	var fig takeAwayFigures
	r, err := startShaped(ctx, env, system, scenario, shape)
	if err != nil {
		return fig, err
	}
	defer r.f.close()
	for i := range trials {
		id, lost, err := r.victim(ctx, i, pick)
		if err != nil {
			return fig, err
		}
		var stopped <-chan struct{}
		t0 := time.Now()
		if crash {
			r.f.crash(id)
		} else {
			stopped = r.f.stop(id)
		}
		// freed: when the first of its shards was seen leaving it (for a
		// crash, Consul's invalidation of the session): the failover
		// splits into Consul's detection and the takeover after it.
		var freed time.Time
		done := reownedBy(id, lost)
		_, t1, err := waitFor(ctx, r.f, within, fmt.Sprintf("%s's %d shards owned again", id, len(lost)), func(v procfleet.View) bool {
			if freed.IsZero() && !keepsAll(v, id, lost) {
				freed = time.Now()
			}
			return done(v)
		})
		if err != nil {
			return fig, err
		}
		started, err := handlersStarted(ctx, r.f.starts(), lost, t0)
		if err != nil {
			return fig, fmt.Errorf("%s's %d shards: %w", id, len(lost), err)
		}
		fig.secs = append(fig.secs, t1.Sub(t0).Seconds())
		fig.handlers = append(fig.handlers, started.Sub(t0).Seconds())
		fig.freed = append(fig.freed, freed.Sub(t0).Seconds())
		fig.shards = append(fig.shards, float64(len(lost)))
		env.Logf("shardbench: %s %s trial %d: %s's %d shards owned again after %v, their new handlers all started after %v (first freed after %v)",
			scenario, system, i+1, id, len(lost), t1.Sub(t0).Round(time.Millisecond), started.Sub(t0).Round(time.Millisecond), freed.Sub(t0).Round(time.Millisecond))
		if stopped != nil {
			<-stopped
		}
		if err := r.addWorker(ctx); err != nil {
			return fig, err
		}
		if err := r.settle(ctx); err != nil {
			return fig, err
		}
	}
	return fig, nil
}

// handlersStarted waits until every shard of lost has a handler that
// started after t0 and returns the latest start. The observer saw every
// shard owned, so the handlers are starting or have started.
func handlersStarted(ctx context.Context, l *procfleet.StartLog, lost []string, t0 time.Time) (time.Time, error) {
	if len(lost) == 0 {
		return time.Time{}, errors.New("the victim owned no shard: nothing to time")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if at, ok := l.Last(lost, t0); ok {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("owned again, but the new handlers of %s did not start within 10 s", l.NotStarted(lost, t0))
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// takeAwayFigures are a take-away scenario's samples, one per trial.
type takeAwayFigures struct {
	handlers []float64 // until every shard of the victim has a new handler running
	secs     []float64 // until every shard of the victim is owned again
	freed    []float64 // until the first of them left the victim
	shards   []float64 // how many it owned
}
