package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// The ownership scenarios: how fast shards move when they must.
// Each runs on one fleet per system, reused across trials: after every
// trial the fleet is brought back to its starting size and waited for.

// fleetShape is the fleet an ownership scenario runs on: its size and the
// lease policy of its shardlease workers.
type fleetShape struct {
	coldSize
	policy     shard.LeasePolicy
	policyName string
	// atScale: the large fleet (100 × 10,000), run by shardlease alone
	// (the baseline would need a million api.Locks); its rows' metrics name
	// the size.
	atScale bool
}

// ownershipShape is the fleet both systems run: 12 workers over 128
// shards, or with --small 3 over 16, on the fast-failover policy.
func ownershipShape(env *benchEnv) fleetShape {
	size := coldSize{12, 128}
	if env.small {
		size = coldSize{3, 16}
	}
	return fleetShape{coldSize: size, policy: fastFailover, policyName: "shard.FastPolicy"}
}

// scaleShape is the large fleet, cold-start's goal size (100 ×
// 10,000; with --small 10 × 200), on the default policy as cold-start runs
// it: 100 workers renewing every 300 ms would load a small machine's agent
// for nothing a join or a hand-off measures.
func scaleShape(env *benchEnv) fleetShape {
	goal, _, _ := coldSizes(env)
	return fleetShape{coldSize: goal, policy: shard.DefaultPolicy, policyName: "shard.DefaultPolicy", atScale: true}
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
func newFleet(env *benchEnv, system, scenario string, shape fleetShape) (fleet, error) {
	if system == systemBaseline {
		return newBLFleet(env, scenario, shape.shards)
	}
	return newSLFleet(env, scenario, slOptions{shards: shape.shards, policy: shape.policy})
}

// ready is a fleet's starting state: every shard owned by one of the
// workers members, and, for shardlease, balanced within one (the baseline
// never balances).
func ready(f fleet, shards, workers int) func(view) bool {
	return func(v view) bool {
		if len(v.members) != workers || v.ownedByMembers() != shards {
			return false
		}
		return f.system() == systemBaseline || v.spread() <= 1
	}
}

// fleetRun holds what every trial of an ownership scenario shares.
type fleetRun struct {
	env             *benchEnv
	f               fleet
	workers, shards int
	next            int // the number of the next worker to add
}

// startFleet adds the workers of the fleet both systems run and waits
// until it is ready.
func startFleet(ctx context.Context, env *benchEnv, system, scenario string) (*fleetRun, error) {
	return startShaped(ctx, env, system, scenario, ownershipShape(env))
}

// startShaped adds shape's workers and waits until the fleet is ready.
func startShaped(ctx context.Context, env *benchEnv, system, scenario string, shape fleetShape) (*fleetRun, error) {
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
	env.logf("shardbench: %s %s: %d workers own %d shards after %v", scenario, system, workers, shards, time.Since(began).Round(time.Millisecond))
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
		return assignor, v.shardsOf(assignor), nil
	}
	var owning []string
	for _, m := range v.members {
		if len(v.shardsOf(m)) > 0 && (pick == anyWorker || m != assignor) {
			owning = append(owning, m)
		}
	}
	if len(owning) == 0 {
		return "", nil, errors.New("no worker owns a shard")
	}
	slices.Sort(owning)
	id := owning[i%len(owning)]
	return id, v.shardsOf(id), nil
}

// reownedBy is the failover condition: every shard in lost is owned by a
// worker other than gone.
func reownedBy(gone string, lost []string) func(view) bool {
	return func(v view) bool {
		for _, s := range lost {
			if w, ok := v.owners[s]; !ok || w == gone {
				return false
			}
		}
		return true
	}
}

// keepsAll reports whether worker id still owns every shard in lost.
func keepsAll(v view, id string, lost []string) bool {
	for _, s := range lost {
		if v.owners[s] != id {
			return false
		}
	}
	return true
}

// takeAway measures, over the trials, the time from taking one worker
// away (crash or clean stop) until its shards are owned again, for one
// system; a new worker replaces it between trials.
func takeAway(ctx context.Context, env *benchEnv, system, scenario string, crash bool, pick victimRule, shape fleetShape, within time.Duration) (takeAwayFigures, error) {
	var fig takeAwayFigures
	r, err := startShaped(ctx, env, system, scenario, shape)
	if err != nil {
		return fig, err
	}
	defer r.f.close()
	for i := range env.trials {
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
		_, t1, err := waitFor(ctx, r.f, within, fmt.Sprintf("%s's %d shards owned again", id, len(lost)), func(v view) bool {
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
		env.logf("shardbench: %s %s trial %d: %s's %d shards owned again after %v, their new handlers all started after %v (first freed after %v)",
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
func handlersStarted(ctx context.Context, l *startLog, lost []string, t0 time.Time) (time.Time, error) {
	if len(lost) == 0 {
		return time.Time{}, errors.New("the victim owned no shard: nothing to time")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if at, ok := l.last(lost, t0); ok {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("owned again, but the new handlers of %s did not start within 10 s", l.notStarted(lost, t0))
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

func crashFailover(ctx context.Context, env *benchEnv) ([]result, error) {
	return takeAwayRows(ctx, env, "crash-failover", true)
}

func gracefulHandoff(ctx context.Context, env *benchEnv) ([]result, error) {
	return takeAwayRows(ctx, env, "graceful-handoff", false)
}

// takeAwayRows runs a take-away scenario for both systems. A crash is
// measured twice for shardlease: of a worker that is not the assignor, and
// of the assignor's own worker, whose crash also ends the assignor.
func takeAwayRows(ctx context.Context, env *benchEnv, scenario string, crash bool) ([]result, error) {
	// The time ends when the last of the victim's shards has a new handler
	// running, as the workers report it: when work resumes. The time the
	// observer saw every shard owned again is beside it (kv_visible_s);
	// it lags by one listing of the prefix.
	const metric = "time until its shards have new handlers running"
	type variant struct {
		system, metric string
		pick           victimRule
		shape          fleetShape
	}
	// A clean stop is also measured on the large fleet. The
	// goals are for a worker that is not the assignor; the assignor's own
	// stop, which also hands the role over (its successor campaigns and
	// lists the fleet before it can place anything), is reported beside.
	common, scale := ownershipShape(env), scaleShape(env)
	const assignorStopped = ", the assignor's worker stopped"
	variants := []variant{{systemShardlease, metric, notAssignor, common}, {systemShardlease, metric + assignorStopped, theAssignor, common},
		{systemBaseline, metric, anyWorker, common},
		{systemShardlease, metric, notAssignor, scale}, {systemShardlease, metric + assignorStopped, theAssignor, scale}}
	if crash {
		variants = []variant{{systemShardlease, metric, notAssignor, common},
			{systemShardlease, metric + ", the assignor's worker crashed", theAssignor, common}, {systemBaseline, metric, anyWorker, common}}
	}
	var rows []result
	for _, v := range variants {
		// The baseline's crash failover waits for a 15 s session TTL
		// (which Consul may stretch to 30 s) and a 15 s lock-delay.
		within := 30 * time.Second
		if v.system == systemBaseline {
			within = 2 * time.Minute
		}
		fig, err := takeAway(ctx, env, v.system, scenario, crash, v.pick, v.shape, within)
		if len(fig.secs) == 0 {
			return rows, fmt.Errorf("%s, %s: %w", v.system, v.shape.metric(v.metric), err)
		}
		row := measured(scenario, v.system, v.shape.metric(v.metric), "s", fig.handlers).with("shards_per_trial_p50", percentile(fig.shards, 50)).
			with("first_freed_s_p50", percentile(fig.freed, 50)).with("first_freed_s_p99", percentile(fig.freed, 99)).
			with("kv_visible_s_p50", percentile(fig.secs, 50)).with("kv_visible_s_p99", percentile(fig.secs, 99))
		if err != nil {
			row = row.withNote(fmt.Sprintf("only %d of %d trials: %v", len(fig.secs), env.trials, err))
		}
		if v.system == systemShardlease {
			row = withPolicy(row, v.shape.policyName, v.shape.policy)
			switch {
			case !crash && v.pick == theAssignor:
				row = row.withNote("the victim holds P/assignor: it resigns, and a new assignor is elected and lists the fleet before the shards move; no goal of its own")
			case !crash:
				goal := 100 * time.Millisecond // docs/benchmarks.md, "Results"
				if v.shape.atScale {
					goal = 500 * time.Millisecond
				}
				row = row.withNote("never the assignor's worker (its stop is the next row)").withGoal(fmt.Sprintf("p99 <= %v", goal), row.P99 <= goal.Seconds())
			case v.pick == notAssignor:
				// Detection is about the check TTL after the victim's last
				// renewal and the takeover a lock-delay and one Acquire
				// after that, so every failover pays the lock-delay rule's
				// floor (ttl − pause); the goal stays where it was.
				row = row.withNote("never the assignor's worker (its crash is the next row)").withGoal("p99 <= 3s", row.P99 <= 3)
			default:
				// P/assignor is freed with the shards; the next candidate
				// takes it a lock-delay (and up to a quarter more) later,
				// lists the fleet and assigns before anyone can acquire.
				row = row.withNote("the victim holds P/assignor: a new assignor is elected before the shards move").withGoal("p99 <= 3.5s", row.P99 <= 3.5)
			}
		}
		rows = append(rows, row)
		if err != nil {
			return rows, fmt.Errorf("%s, %s: %w", v.system, v.shape.metric(v.metric), err)
		}
	}
	return rows, nil
}

// withPolicy adds the lease policy the shardlease workers ran with to a
// row: its four numbers as extra figures, and a note naming it and showing
// that it meets both rules of shard.LeasePolicy, the second of which
// (lock-delay ≥ ttl − pause, the step-down deadline) sets how long a
// crashed worker's shards stay closed after Consul frees them.
func withPolicy(r result, name string, p shard.LeasePolicy) result {
	r = r.with("check_ttl_s", p.TTL.Seconds()).with("renew_s", p.RenewEvery.Seconds()).
		with("pause_budget_s", p.PauseBudget.Seconds()).with("lock_delay_s", p.EffectiveLockDelay().Seconds())
	return r.withNote(fmt.Sprintf("policy %s: 2 × renew %v + pause %v = %v ≤ ttl %v; lock-delay %v ≥ ttl − pause = %v",
		name, p.RenewEvery, p.PauseBudget, p.Need(), p.TTL, p.EffectiveLockDelay(), p.MinLockDelay()))
}
