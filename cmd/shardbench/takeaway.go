package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/shard"
)

func crashFailover(ctx context.Context, env *benchEnv) ([]result, error) {
	return takeAwayRows(ctx, env, "crash-failover", true)
}

func gracefulHandoff(ctx context.Context, env *benchEnv) ([]result, error) {
	return takeAwayRows(ctx, env, "graceful-handoff", false)
}

// minOwnershipTrials is the least number of trials of a take-away row,
// whatever --trials says (unless --small): p99 over 5 trials would be the
// slowest of them. No trial takes minutes: the slowest, the default
// baseline's crash, takes about 45 s.
const minOwnershipTrials = 20

// takeAwayTrials is how many trials a take-away row runs: --trials with
// --small, else at least minOwnershipTrials.
func takeAwayTrials(env *benchEnv) int {
	if env.small {
		return env.trials
	}
	return max(env.trials, minOwnershipTrials)
}

// takeAwayVariant is one row of a take-away scenario.
type takeAwayVariant struct {
	system, metric string
	pick           victimRule
	shape          fleetShape
}

// takeAwayVariants lists a take-away scenario's rows. On the common fleet
// (OS processes), every system on each policy: shardlease and the tuned
// baseline on the fast policy and on the default one, the default baseline
// on its own defaults; and shardlease's assignor's worker taken away, on
// the fast policy. On the large fleet (in-process), shardlease alone: a
// stop of a worker and of the assignor's, and a crash of the assignor's.
// --small leaves out the crashes on the default policy (about 20 s each:
// a 10 s check TTL and a 10 s lock-delay), the large fleet's included.
func takeAwayVariants(env *benchEnv, crash bool) []takeAwayVariant {
	const metric = "time until its shards have new handlers running"
	assignorGone := metric + ", the assignor's worker stopped"
	if crash {
		assignorGone = metric + ", the assignor's worker crashed"
	}
	fast, def, scale := ownershipShape(env), defaultShape(env), scaleShape(env)
	fast.processes, def.processes = true, true
	vs := []takeAwayVariant{
		{systemShardlease, metric, notAssignor, fast}, {systemShardlease, assignorGone, theAssignor, fast},
		{systemTuned, metric, anyWorker, fast},
	}
	slow := crash && env.small
	if !slow {
		vs = append(vs, takeAwayVariant{systemShardlease, metric, notAssignor, def}, takeAwayVariant{systemTuned, metric, anyWorker, def})
	}
	vs = append(vs, takeAwayVariant{systemBaseline, metric, anyWorker, fast})
	if !crash {
		vs = append(vs, takeAwayVariant{systemShardlease, metric, notAssignor, scale})
	}
	if !slow {
		vs = append(vs, takeAwayVariant{systemShardlease, assignorGone, theAssignor, scale})
	}
	return vs
}

// takeAwayWithin bounds one trial's wait for the victim's shards: a few
// times what the policy's detection and lock-delay take.
func takeAwayWithin(v takeAwayVariant) time.Duration {
	switch {
	case v.system == systemBaseline:
		// A 15 s session TTL (which Consul may stretch to 30 s), a 15 s
		// lock-delay and a 5 s retry.
		return 2 * time.Minute
	case v.shape.atScale:
		return time.Minute
	}
	return max(30*time.Second, 3*(v.shape.policy.TTL+v.shape.policy.EffectiveLockDelay()))
}

// takeAwayRows runs a take-away scenario's variants. The rows of one
// comparison share scenario, metric and Policy: shardlease's and the tuned
// baseline's name the shardlease policy, the default baseline's
// policyDefaults.
func takeAwayRows(ctx context.Context, env *benchEnv, scenario string, crash bool) ([]result, error) {
	var rows []result
	for _, v := range takeAwayVariants(env, crash) {
		trials := takeAwayTrials(env)
		fig, err := takeAway(ctx, env, v.system, scenario, crash, v.pick, v.shape, trials, takeAwayWithin(v))
		if len(fig.secs) == 0 {
			return rows, fmt.Errorf("%s, %s, %s: %w", v.system, v.shape.policyName, v.shape.metric(v.metric), err)
		}
		// The time ends when the last of the victim's shards has a new
		// handler running, as the workers report it: when work resumes.
		// The time the observer saw every shard owned again is beside it
		// (kv_visible_s); it lags by one listing of the prefix.
		row := measured(scenario, v.system, v.shape.metric(v.metric), "s", fig.handlers).with("shards_per_trial_p50", percentile(fig.shards, 50)).
			with("first_freed_s_p50", percentile(fig.freed, 50)).with("first_freed_s_p99", percentile(fig.freed, 99)).
			with("kv_visible_s_p50", percentile(fig.secs, 50)).with("kv_visible_s_p99", percentile(fig.secs, 99))
		if err != nil {
			row = row.withNote(fmt.Sprintf("only %d of %d trials: %v", len(fig.secs), trials, err))
		}
		if v.shape.processes {
			row = row.withNote("each worker an OS process (crash: SIGKILL; stop: SIGTERM); the time ends at the new handlers' start lines, by the workers' wall clocks")
		} else {
			row = row.withNote("in-process workers (crash: their Consul connection cut)")
		}
		switch v.system {
		case systemShardlease:
			row = shardleaseTakeAwayGoal(withPolicy(row, v.shape.policyName, v.shape.policy), crash, v)
		case systemTuned:
			row = withTunedPolicy(row, v.shape.policyName, v.shape.policy)
		default:
			row = withDefaultsPolicy(row, env.small)
		}
		rows = append(rows, row)
		if err != nil {
			return rows, fmt.Errorf("%s, %s, %s: %w", v.system, v.shape.policyName, v.shape.metric(v.metric), err)
		}
	}
	return rows, nil
}

// shardleaseTakeAwayGoal states a shardlease row's goal, on the fast
// policy (docs/benchmarks.md, "Results"), and what its victim was.
func shardleaseTakeAwayGoal(row result, crash bool, v takeAwayVariant) result {
	fast := v.shape.policyName == policyFast
	switch {
	case !crash && v.pick == theAssignor:
		return row.withNote("the victim holds P/assignor: it resigns, and a new assignor is elected and lists the fleet before the shards move; no goal of its own")
	case crash && v.pick == theAssignor:
		// P/assignor is freed with the shards; the next candidate takes
		// it a lock-delay (and up to a quarter more) later, lists the
		// fleet and assigns before anyone can acquire.
		row = row.withNote("the victim holds P/assignor: a new assignor is elected before the shards move")
		if !fast {
			return row
		}
		return row.withGoal("p99 <= 3.5s", row.P99 <= 3.5)
	case !crash:
		row = row.withNote("never the assignor's worker (its stop is another row)")
		goal := 100 * time.Millisecond
		if v.shape.atScale {
			goal = 500 * time.Millisecond
		}
		return row.withGoal(fmt.Sprintf("p99 <= %v", goal), row.P99 <= goal.Seconds())
	}
	// Detection is about the check TTL after the victim's last renewal and
	// the takeover a lock-delay and one Acquire after that, so every
	// failover pays the lock-delay rule's floor (ttl − pause).
	row = row.withNote("never the assignor's worker (its crash is another row)")
	if !fast {
		return row
	}
	return row.withGoal("p99 <= 3s", row.P99 <= 3)
}

// withPolicy adds the lease policy the shardlease workers ran with to a
// row: its name, its four numbers as extra figures, and a note showing
// that it meets both rules of shard.LeasePolicy, the second of which
// (lock-delay ≥ ttl − pause, the step-down deadline) sets how long a
// crashed worker's shards stay closed after Consul frees them.
func withPolicy(r result, name string, p shard.LeasePolicy) result {
	r.Policy = name
	r = r.with("check_ttl_s", p.TTL.Seconds()).with("renew_s", p.RenewEvery.Seconds()).
		with("pause_budget_s", p.PauseBudget.Seconds()).with("lock_delay_s", p.EffectiveLockDelay().Seconds())
	return r.withNote(fmt.Sprintf("policy %s: 2 × renew %v + pause %v = %v ≤ ttl %v; lock-delay %v ≥ ttl − pause = %v",
		name, p.RenewEvery, p.PauseBudget, p.Need(), p.TTL, p.EffectiveLockDelay(), p.MinLockDelay()))
}

// withTunedPolicy names the shardlease policy the tuned baseline was tuned
// to, with the settings it took from it.
func withTunedPolicy(r result, name string, p shard.LeasePolicy) result {
	r.Policy = name
	r = r.with("check_ttl_s", p.TTL.Seconds()).with("renew_s", p.RenewEvery.Seconds()).with("lock_delay_s", p.EffectiveLockDelay().Seconds())
	return r.withNote(fmt.Sprintf("api.Lock tuned to %s: one session per worker bound to a TTL check of %v passed every %v, lock-delay %v; "+
		"at most ⌈N/W⌉ shards a worker; a try refused in lock-delay retried a lock-delay later; no fence: the time ends when the lock is acquired",
		name, p.TTL, p.RenewEvery, p.EffectiveLockDelay()))
}

// withDefaultsPolicy states the default baseline's settings: api.Lock's
// own (with --small, a 10 s session TTL and a 1 ms lock-delay, and a
// crashed worker's sessions destroyed by the harness).
func withDefaultsPolicy(r result, small bool) result {
	r.Policy = policyDefaults
	ttl, _ := time.ParseDuration(api.DefaultLockSessionTTL)
	delay, how := 15*time.Second, "" // the session default
	if small {
		ttl, delay, how = 10*time.Second, time.Millisecond, " (--small: a crashed worker's sessions are destroyed by the harness)"
	}
	r = r.with("session_ttl_s", ttl.Seconds()).with("lock_delay_s", delay.Seconds()).with("lock_retry_s", api.DefaultLockRetryTime.Seconds())
	return r.withNote(fmt.Sprintf("api.Lock defaults%s: one session per lock, session TTL %v (Consul acts on it after up to twice that), lock-delay %v, "+
		"a retry %v after a refusal in lock-delay, %v blocking queries; never rebalances; no fence: the time ends when the lock is acquired",
		how, ttl, delay, api.DefaultLockRetryTime, api.DefaultLockWaitTime))
}
